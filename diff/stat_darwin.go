package diff

import "golang.org/x/sys/unix"

// rawOf converts Darwin's stat: st_mode is 16 bits and st_dev a signed 32-bit number (kept as
// its unsigned bit pattern, so that equal devices stay equal). x/sys/unix names Darwin's
// st_mtimespec/st_ctimespec Mtim/Ctim, as on Linux.
func rawOf(st *unix.Stat_t) rawStat {
	return rawStat{mode: uint32(st.Mode), dev: uint64(uint32(st.Dev)), ino: st.Ino,
		mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
}
