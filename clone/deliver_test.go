package clone

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/git-corral/git-corral/internal/sandboxguest"
)

func newGuest(t *testing.T) *sandboxguest.Guest {
	t.Helper()
	g, err := sandboxguest.New()
	must(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("guest stderr:\n%s", g.Stderr())
		}
		g.Close()
	})
	return g
}

// inGuest runs a shell snippet in the guest with $1 = dir and returns its stdout.
func inGuest(t *testing.T, g *sandboxguest.Guest, dir, script string) string {
	t.Helper()
	var out bytes.Buffer
	code, err := g.Exec(context.Background(), []string{"sh", "-c", "set -e; cd \"$1\"; " + script, "x", dir}, nil, &out)
	if err != nil || code != 0 {
		t.Fatalf("guest %q: %d %v\n%s", script, code, err, g.Stderr())
	}
	return strings.TrimSpace(out.String())
}

// TestCloneDeliverFetchBack is the whole clone-mode round trip without a VM: fetch over https
// into the store, deliver into a sandbox guest running its own git as an unprivileged user,
// commit there, fetch back into refs/corral/<box>/…; the host never runs git, never has a work
// tree, and the checkout's untracked files never leave it.
func TestCloneDeliverFetchBack(t *testing.T) {
	root := hermetic(t)
	work := filepath.Join(root, "work")
	makeRepo(t, work, map[string]string{"README": "hello\n", ".gitignore": ".env\n"})
	writeFiles(t, work, map[string]string{".env": "SECRET=hunter2\n"})
	bareCopy(t, root, work, "p")
	base, hc := serveHTTPS(t, filepath.Join(root, "srv"), nil)
	g := newGuest(t)
	check := recordGit(t, root)

	store := filepath.Join(root, "home", ".corral", "clones", "p-123456.git")
	if _, err := Fetch(bg(), base+"/p.git", store, Options{HTTPClient: hc}); err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	dir := g.Path("work/p")
	if err := Deliver(bg(), g, store, DeliverOptions{Dir: dir, Origin: base + "/p.git"}); err != nil {
		t.Fatalf("Deliver: %v\n%s", err, g.Stderr())
	}
	if got := inGuest(t, g, dir, "cat README; git rev-parse --abbrev-ref HEAD; git config remote.origin.url; git status --porcelain"); got != "hello\nmain\n"+base+"/p.git" {
		t.Errorf("guest checkout: %q", got)
	}
	if fi, err := os.Stat(filepath.Join(dir, "README")); err != nil || fi.Sys().(*syscall.Stat_t).Uid != g.UID {
		t.Errorf("checkout not written by the guest user %d: %v", g.UID, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".env")); !os.IsNotExist(err) {
		t.Errorf(".env reached the box: %v", err)
	}
	if err := Deliver(bg(), g, store, DeliverOptions{Dir: dir}); err == nil {
		t.Error("Deliver into a non-empty dir succeeded")
	}

	inGuest(t, g, dir, "echo change >> README; git commit -qam change; git checkout -qb topic; echo t > t; git add t; git commit -qm topic")
	res, err := FetchBack(bg(), g, store, FetchBackOptions{Dir: dir, Box: "p-123456"})
	if err != nil {
		t.Fatalf("FetchBack: %v\n%s", err, g.Stderr())
	}
	check()
	want := []Ref{
		{"refs/corral/p-123456/main", inGuest(t, g, dir, "git rev-parse main")},
		{"refs/corral/p-123456/topic", inGuest(t, g, dir, "git rev-parse topic")},
	}
	if !reflect.DeepEqual(res.Refs, want) {
		t.Errorf("FetchBack refs %v, want %v", res.Refs, want)
	}
	if got := git(t, store, "show", "refs/corral/p-123456/main:README"); got != "hello\nchange" {
		t.Errorf("fetched README = %q", got)
	}
	if got := git(t, store, "rev-parse", "main"); got != git(t, work, "rev-parse", "main") {
		t.Errorf("the store's own main moved")
	}
	git(t, store, "fsck", "--strict", "--no-dangling")

	inGuest(t, g, dir, "git checkout -q main; git branch -D -q topic")
	res, err = FetchBack(bg(), g, store, FetchBackOptions{Dir: dir, Box: "p-123456"})
	if err != nil || !reflect.DeepEqual(res.Removed, []string{"refs/corral/p-123456/topic"}) {
		t.Errorf("second FetchBack: %+v, %v; want topic removed", res, err)
	}
	// No work tree of the untrusted code anywhere on the host side.
	for _, p := range tree(t, filepath.Join(root, "home")) {
		if filepath.Base(p) == "README" || filepath.Base(p) == ".env" {
			t.Errorf("host has a checked-out file %s", p)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(store, "corral-fetch-*")); len(left) > 0 {
		t.Errorf("staging left behind: %v", left)
	}
}

// TestDeliverArgv: every value reaches the guest script as one positional argument, and values
// that could smuggle a line or an option are refused before anything runs.
func TestDeliverArgv(t *testing.T) {
	argv, err := DeliverArgv(DeliverOptions{Dir: "/home/u/p", Origin: "https://x/y; rm -rf ~", Branch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if argv[0] != "sh" || argv[1] != "-c" || argv[2] != deliverScript || argv[5] != "https://x/y; rm -rf ~" {
		t.Errorf("argv %q", argv)
	}
	// The script is fixed text: none of the values appear in it.
	if strings.Contains(argv[2], "rm -rf") {
		t.Error("a value was interpolated into the script")
	}
	for _, o := range []DeliverOptions{
		{Dir: "rel/p", Branch: "main"}, {Dir: "/p/../q", Branch: "main"}, {Dir: "/p\nx", Branch: "main"},
		{Dir: "/p", Origin: "-oProxyCommand=x", Branch: "main"}, {Dir: "/p", Origin: "https://x\n", Branch: "main"},
		{Dir: "/p", Branch: "-f"}, {Dir: "/p", Branch: "a..b"}, {Dir: "/p", Branch: "a\x1b"},
	} {
		if _, err := DeliverArgv(o); err == nil {
			t.Errorf("DeliverArgv(%+v) accepted it", o)
		}
	}
	// The real script, run by sh with a hostile origin, sets it verbatim and runs nothing.
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
}
