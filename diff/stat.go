package diff

// rawStat is what the walk keeps of lstat, in the same types on every host; rawOf (one per
// host kernel, in stat_linux.go and stat_darwin.go) fills it from the kernel's own struct.
type rawStat struct {
	mode         uint32
	dev, ino     uint64
	mtime, ctime int64 // ns
}
