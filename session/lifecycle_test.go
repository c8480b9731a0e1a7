package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/project"
	"github.com/git-corral/git-corral/vm"
)

// TestBoxName: `name` selects the named box for this checkout (control: without it, the derived
// one); a box recorded for another checkout is refused, never shared; a box recorded for this
// one, or not made yet, is taken; and the derived box's prefetched holder connection is dropped.
func TestBoxName(t *testing.T) {
	h := home.Home{Dir: t.TempDir()}
	m := &vm.Manager{Home: h}
	must(t, os.MkdirAll(h.Boxes(), 0o700))
	must(t, m.WriteMeta(vm.Meta{Box: "theirs", Project: "/src/other"}))
	must(t, m.WriteMeta(vm.Meta{Box: "mine", Project: "/src/me"}))
	cases := []struct {
		name, want string
		err        error
	}{
		{"", "me-abc123", nil},
		{"me-abc123", "me-abc123", nil},
		{"fresh", "fresh", nil},
		{"mine", "mine", nil},
		{"theirs", "", ErrBoxOfAnotherProject},
	}
	for _, c := range cases {
		p := &project.Project{TopLevel: "/src/me", Box: "me-abc123"}
		pf := &guardPrefetch{dialed: make(chan struct{}), done: make(chan struct{})}
		close(pf.done)
		err := renameBox(h, p, &policy.Config{Name: c.name}, &pf)
		if !errors.Is(err, c.err) || err == nil && p.Box != c.want {
			t.Errorf("name %q: box %q, %v; want %q, %v", c.name, p.Box, err, c.want, c.err)
		}
		if err != nil && (!strings.Contains(err.Error(), `"theirs"`) || !strings.Contains(err.Error(), "/src/other")) {
			t.Errorf("name %q: error %q does not name the box and its project", c.name, err)
		}
		if renamed := c.want != "" && c.want != "me-abc123"; renamed != (pf == nil) {
			t.Errorf("name %q: prefetched connection kept %v, want it dropped exactly when renamed", c.name, pf != nil)
		}
	}
}

// TestRunTimeout: the timeout key is run's default; --timeout, when given, wins, 0 included.
func TestRunTimeout(t *testing.T) {
	cfg := &policy.Config{Timeout: 90 * time.Second}
	for _, c := range []struct {
		flag time.Duration
		set  bool
		want time.Duration
	}{{0, false, 90 * time.Second}, {5 * time.Second, true, 5 * time.Second}, {0, true, 0}} {
		if got := RunTimeout(c.flag, c.set, cfg); got != c.want {
			t.Errorf("RunTimeout(%v, set %v) = %v, want %v", c.flag, c.set, got, c.want)
		}
	}
	if got := RunTimeout(0, false, &policy.Config{}); got != 0 {
		t.Errorf("no key, no flag: %v, want none", got)
	}
}

// TestImageKey: `image` names a built image by the name `image list` prints (control: that name
// is found); an unknown one is refused naming the key, the file:line that set it and the names
// there are.
func TestImageKey(t *testing.T) {
	h := home.Home{Dir: t.TempDir()}
	t.Setenv("CORRAL_SYSTEM_IMAGES", filepath.Join(h.Dir, "no-system-images"))
	img := filepath.Join(h.Images(), "0123456789abcdef")
	must(t, os.MkdirAll(img, 0o700))
	for _, f := range []string{vm.ImageDisk, vm.ImageKernel, vm.ImageInitrd} {
		must(t, os.WriteFile(filepath.Join(img, f), nil, 0o600))
	}
	must(t, os.WriteFile(filepath.Join(img, "image.json"), []byte(`{"hash":"0123456789abcdef","arch":"`+vm.HostArch()+`"}`), 0o600))
	must(t, os.WriteFile(filepath.Join(h.Dir, "config.toml"), []byte("# trusted\nimage = \"nosuch\"\n"), 0o600))
	repo := hermeticIdentity(t, "")
	opts := policy.LoadOptions{Home: h, TopLevel: repo, Box: "repo-abc123"}
	got, err := vm.FindImageFor(vm.ImageDirs(h.Images(), os.Getenv), "0123456789abcdef", vm.HostArch())
	if err != nil || got.Dir != img {
		t.Fatalf("known image: %+v, %v", got, err)
	}
	if err := checkImage(context.Background(), h, Request{}, opts, &policy.Config{Image: "0123456789abcdef"}); err != nil {
		t.Fatalf("known image refused: %v", err)
	}
	err = checkImage(context.Background(), h, Request{}, opts, &policy.Config{Image: "nosuch"})
	for _, want := range []string{"image (", "config.toml:2", `"nosuch"`, "0123456789abcdef"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("unknown image: error %v lacks %q", err, want)
		}
	}
}
