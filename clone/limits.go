package clone

import (
	"fmt"
	"time"
)

// Limits bound what a fetch may cost the host. They are enforced while data arrives and before
// anything is expanded: the ref count as the refs are listed, the byte cap on the stream, the
// object count from the pack header before any object is read, object sizes and delta depth in a
// scan of the pack before go-git resolves a single delta (for a local source: a scan of its packs
// and the bounded header of each loose object, before go-git reads any), and the time cap on the
// whole operation through its context.
type Limits struct {
	// MaxPackBytes caps the bytes of pack data received (default 2 GiB).
	MaxPackBytes int64
	// MaxObjects caps the number of objects in the pack (default 4,000,000).
	MaxObjects int64
	// MaxRefs caps the branches and tags a source lists (default 100,000); refs of every kind
	// together are capped at ten times as many (refListFactor).
	MaxRefs int64
	// MaxObjectBytes caps the inflated size of any one object or delta (default 512 MiB).
	MaxObjectBytes int64
	// MaxDeltaDepth caps the length of a delta chain (default 1000; git's own packs stay ≤ 250).
	MaxDeltaDepth int
	// MaxPathBytes caps the length of a path in a tree (default 4096).
	MaxPathBytes int
	// MaxTreeDepth caps directory nesting (default 512).
	MaxTreeDepth int
	// Timeout caps the whole operation (default 30 minutes).
	Timeout time.Duration
}

// DefaultLimits returns the limits used when a field is zero.
func DefaultLimits() Limits {
	return Limits{
		MaxPackBytes:   2 << 30,
		MaxObjects:     4_000_000,
		MaxRefs:        100_000,
		MaxObjectBytes: 512 << 20,
		MaxDeltaDepth:  1000,
		MaxPathBytes:   4096,
		MaxTreeDepth:   512,
		Timeout:        30 * time.Minute,
	}
}

// Validate fills zero fields with defaults and refuses negative ones.
func (l *Limits) Validate() error {
	d := DefaultLimits()
	if l.MaxPackBytes < 0 || l.MaxObjects < 0 || l.MaxRefs < 0 || l.MaxObjectBytes < 0 || l.MaxDeltaDepth < 0 ||
		l.MaxPathBytes < 0 || l.MaxTreeDepth < 0 || l.Timeout < 0 {
		return fmt.Errorf("clone limits: negative value in %+v", *l)
	}
	fill(&l.MaxPackBytes, d.MaxPackBytes)
	fill(&l.MaxObjects, d.MaxObjects)
	fill(&l.MaxRefs, d.MaxRefs)
	fill(&l.MaxObjectBytes, d.MaxObjectBytes)
	fill(&l.MaxDeltaDepth, d.MaxDeltaDepth)
	fill(&l.MaxPathBytes, d.MaxPathBytes)
	fill(&l.MaxTreeDepth, d.MaxTreeDepth)
	fill(&l.Timeout, d.Timeout)
	return nil
}

func fill[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}
