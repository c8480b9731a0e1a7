package diff

import "golang.org/x/sys/unix"

// rawOf converts Linux's stat: st_mode is 32 bits, st_dev 64, times in st_mtim/st_ctim.
func rawOf(st *unix.Stat_t) rawStat {
	return rawStat{mode: st.Mode, dev: st.Dev, ino: st.Ino, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
}
