package gitshadow

import "syscall"

// keyOfStat converts Darwin's stat: times in st_mtimespec/st_ctimespec, st_mode 16 bits and
// st_dev a signed 32-bit number (kept as its unsigned bit pattern, so equal devices stay equal).
func keyOfStat(st *syscall.Stat_t) statKey {
	return statKey{Size: st.Size, Mtime: st.Mtimespec.Nano(), Ctime: st.Ctimespec.Nano(), Ino: st.Ino,
		Dev: uint64(uint32(st.Dev)), Mode: uint32(st.Mode), UID: st.Uid, GID: st.Gid}
}
