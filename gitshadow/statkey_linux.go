package gitshadow

import "syscall"

// keyOfStat converts Linux's stat: times in st_mtim/st_ctim, st_dev already 64 bits.
func keyOfStat(st *syscall.Stat_t) statKey {
	return statKey{Size: st.Size, Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano(), Ino: st.Ino,
		Dev: st.Dev, Mode: st.Mode, UID: st.Uid, GID: st.Gid}
}
