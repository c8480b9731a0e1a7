package clone

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/git-corral/git-corral/broker"
)

// noExecGuest fails the test when anything would run in the box.
type noExecGuest struct{ t *testing.T }

func (g noExecGuest) Exec(_ context.Context, argv []string, _ io.Reader, _ io.Writer) (int, error) {
	g.t.Errorf("the guest was asked to run %q", argv)
	return 1, nil
}

// serveGitDaemon serves every repository under dir with the real git daemon on a loopback port
// and returns the git:// base URL.
func serveGitDaemon(t *testing.T, dir string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	must(t, l.Close())
	cmd := exec.Command(realGit, "daemon", "--reuseaddr", "--export-all", "--base-path="+dir,
		"--listen=127.0.0.1", "--port="+strconv.Itoa(port), dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	must(t, cmd.Start())
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	for range 100 {
		if c, err := net.Dial("tcp", l.Addr().String()); err == nil {
			c.Close()
			return fmt.Sprintf("git://127.0.0.1:%d", port)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("git daemon did not listen")
	return ""
}

// superWithSubmodule makes a work tree at dir whose "lib" is a gitlink to sub's HEAD with the
// given .gitmodules url, plus extra files.
func superWithSubmodule(t *testing.T, dir, sub, url string, extra map[string]string) {
	t.Helper()
	files := map[string]string{"README": "super\n", ".gitmodules": "[submodule \"lib\"]\n\tpath = lib\n\turl = " + url + "\n"}
	for k, v := range extra {
		files[k] = v
	}
	must(t, os.MkdirAll(dir, 0o755))
	git(t, dir, "init", "-q")
	writeFiles(t, dir, files)
	git(t, dir, "add", "-A")
	git(t, dir, "update-index", "--add", "--cacheinfo", "160000,"+git(t, sub, "rev-parse", "HEAD")+",lib")
	git(t, dir, "commit", "-q", "-m", "super")
}

// TestSubmodulesFetchedInGuest: the host fetches the superproject only; the guest's own git
// fetches the validated submodule from a real git daemon on loopback. A nested submodule whose
// .gitmodules the host never saw asks for file://, and the guest's protocol policy refuses it.
func TestSubmodulesFetchedInGuest(t *testing.T) {
	root := hermetic(t)
	srv := filepath.Join(root, "srv")
	secret := filepath.Join(root, "secret")
	makeRepo(t, secret, map[string]string{"key": "SECRET-FILE-TRANSPORT\n"})
	leaf := filepath.Join(root, "leaf")
	makeRepo(t, leaf, map[string]string{"leaf.txt": "leaf\n"})
	bareCopy(t, root, leaf, "leaf")
	base := serveGitDaemon(t, srv)
	sub := filepath.Join(root, "sub")
	superWithSubmodule(t, sub, leaf, base+"/leaf.git", map[string]string{"sub.txt": "from the submodule\n"})
	bareCopy(t, root, sub, "sub")
	work := filepath.Join(root, "work")
	superWithSubmodule(t, work, sub, base+"/sub.git", nil)
	g := newGuest(t)
	check := recordGit(t, root)

	store := filepath.Join(os.Getenv("CORRAL_HOME"), "clones", "work.git")
	if _, err := Fetch(bg(), work, store, Options{Cwd: root}); err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	plan, err := PlanSubmodules(store, SubmoduleOptions{Transports: TransportsFull})
	if err != nil || len(plan.Fetch) != 1 || plan.Fetch[0].Path != "lib" || plan.Fetch[0].Transport != "git" || len(plan.Skipped) != 0 {
		t.Fatalf("PlanSubmodules = %+v, %v; want lib over git", plan, err)
	}
	check() // everything so far ran on the host without git
	dir := g.Path("src/work")
	must(t, Deliver(bg(), g, store, DeliverOptions{Dir: dir}))
	must(t, UpdateSubmodules(bg(), g, dir, plan))
	if got := inGuest(t, g, dir, "cat lib/sub.txt lib/lib/leaf.txt"); got != "from the submodule\nleaf" {
		t.Errorf("guest submodule content %q, want the submodule and its nested one", got)
	}

	// A nested submodule pointing at a local repository: the host never reads its .gitmodules;
	// the guest git's protocol policy refuses the file transport.
	evil := filepath.Join(root, "evil")
	superWithSubmodule(t, evil, secret, "file://"+secret, nil)
	bareCopy(t, root, evil, "evil")
	work2 := filepath.Join(root, "work2")
	superWithSubmodule(t, work2, evil, base+"/evil.git", nil)
	store2 := filepath.Join(os.Getenv("CORRAL_HOME"), "clones", "work2.git")
	if _, err := Fetch(bg(), work2, store2, Options{Cwd: root}); err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	plan2, err := PlanSubmodules(store2, SubmoduleOptions{Transports: TransportsFull})
	must(t, err)
	dir2 := g.Path("src/work2")
	must(t, Deliver(bg(), g, store2, DeliverOptions{Dir: dir2}))
	if err := UpdateSubmodules(bg(), g, dir2, plan2); err == nil {
		t.Error("UpdateSubmodules succeeded although a nested submodule uses file://")
	}
	if !strings.Contains(g.Stderr(), "transport 'file' not allowed") {
		t.Errorf("guest git did not refuse the file transport; stderr:\n%s", g.Stderr())
	}
	if out := inGuest(t, g, dir2, "cat lib/lib/key 2>/dev/null || true"); strings.Contains(out, "SECRET") {
		t.Error("the nested file:// submodule was checked out in the guest")
	}
}

// TestPlanSubmodulesSkipsTransports: a broker box fetches over https only and an offline box
// not at all; an entry it may not fetch is skipped by name and nothing runs in the guest.
func TestPlanSubmodulesSkipsTransports(t *testing.T) {
	root := hermetic(t)
	sub := filepath.Join(root, "sub")
	makeRepo(t, sub, map[string]string{"x": "x\n"})
	for _, tc := range []struct {
		name, url, origin string
		transports        []string
		fetch             bool
		reason            string
	}{
		{"full git://", "git://example.invalid/x", "", TransportsFull, true, ""},
		{"full scp-like", "git@example.invalid:x.git", "", TransportsFull, true, ""},
		{"full http://", "http://example.invalid/x", "", TransportsFull, false, "uses http"},
		{"broker git://", "git://example.invalid/x", "", TransportsBroker, false, "uses git"},
		{"broker ssh://", "ssh://example.invalid/x", "", TransportsBroker, false, "uses ssh"},
		{"broker https://", "https://example.invalid/x", "", TransportsBroker, true, ""},
		{"offline https://", "https://example.invalid/x", "", nil, false, "offline"},
		{"relative without origin", "../x.git", "", TransportsFull, false, "no origin"},
		{"relative to https origin", "../x.git", "https://example.invalid/super.git", TransportsBroker, true, ""},
		{"relative to ssh origin in broker mode", "../x.git", "ssh://example.invalid/super.git", TransportsBroker, false, "uses ssh"},
		{"relative climbing out of the origin", "../../x.git", "https://example.invalid/super.git", TransportsFull, false, "out of origin"},
		{"relative climbing out of an scp-like origin", "../../../x.git", "git@example.invalid:org/super.git", TransportsFull, false, "out of origin"},
		{"relative within an scp-like origin", "../../x.git", "git@example.invalid:org/super.git", TransportsFull, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work := filepath.Join(t.TempDir(), "w")
			superWithSubmodule(t, work, sub, tc.url, nil)
			store := filepath.Join(t.TempDir(), "s.git")
			if _, err := Fetch(bg(), work, store, Options{Cwd: root}); err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			plan, err := PlanSubmodules(store, SubmoduleOptions{Origin: tc.origin, Transports: tc.transports})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(plan.Fetch) == 1; got != tc.fetch {
				t.Fatalf("plan %+v: fetch %v, want %v", plan, got, tc.fetch)
			}
			if !tc.fetch {
				if len(plan.Skipped) != 1 || plan.Skipped[0].Path != "submodule.lib.url" || !strings.Contains(plan.Skipped[0].Reason, tc.reason) {
					t.Errorf("skipped %+v, want submodule.lib.url with %q", plan.Skipped, tc.reason)
				}
				must(t, UpdateSubmodules(bg(), noExecGuest{t}, "/home/u/src/w", plan))
			}
		})
	}
}

// TestPlanSubmodulesRefusesHostile: a store whose delivered commit carries a hostile
// .gitmodules (the classes of THREATS.md §3, in a store that did not come through Fetch) is
// refused with the entry named, and nothing runs in the guest.
func TestPlanSubmodulesRefusesHostile(t *testing.T) {
	root := hermetic(t)
	cases := hostileGitmodules()
	for _, c := range hostileTrees() {
		if c.name == "symlinked .gitmodules" {
			cases = append(cases, c)
		}
	}
	for i, c := range cases {
		if c.name == "nested .gitmodules too" { // only the top-level file configures submodules
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			store := filepath.Join(root, fmt.Sprintf("s%02d.git", i))
			git(t, root, "init", "-q", "--bare", store)
			c.build(t, store)
			plan, err := PlanSubmodules(store, SubmoduleOptions{Transports: TransportsFull})
			var re *RefusedError
			if !errors.As(err, &re) || !re.Has(ClassGitmodules) {
				t.Fatalf("PlanSubmodules = %+v, %v; want a gitmodules refusal", plan, err)
			}
			if !strings.Contains(err.Error(), ".gitmodules") && !strings.Contains(err.Error(), "submodule.") {
				t.Errorf("refusal %v names no entry", err)
			}
			must(t, UpdateSubmodules(bg(), noExecGuest{t}, "/home/u/src/w", plan))
		})
	}
}

// TestPlanSubmodulesReadsSnapshot: with source = "clone", an uncommitted edit of a tracked
// .gitmodules travels in the snapshot; a hostile edit is refused there, though HEAD is clean.
func TestPlanSubmodulesReadsSnapshot(t *testing.T) {
	root := hermetic(t)
	sub := filepath.Join(root, "sub")
	makeRepo(t, sub, map[string]string{"x": "x\n"})
	work := filepath.Join(root, "work")
	superWithSubmodule(t, work, sub, "https://example.invalid/x.git", nil)
	writeFiles(t, work, map[string]string{".gitmodules": "[submodule \"lib\"]\n\tpath = lib\n\turl = ext::sh -c touch% /tmp/pwned\n"})
	store := filepath.Join(os.Getenv("CORRAL_HOME"), "clones", "work.git")
	if _, err := Fetch(bg(), work, store, Options{Cwd: root}); err != nil {
		t.Fatalf("Fetch of the clean HEAD: %v", err)
	}
	if plan, err := PlanSubmodules(store, SubmoduleOptions{Transports: TransportsFull}); err != nil || len(plan.Fetch) != 1 {
		t.Fatalf("HEAD's plan = %+v, %v; want lib", plan, err)
	}
	if changed, err := SnapshotTracked(bg(), work, store); err != nil || !changed {
		t.Fatalf("SnapshotTracked = %v, %v", changed, err)
	}
	_, err := PlanSubmodules(store, SubmoduleOptions{Transports: TransportsFull})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "submodule.lib.url") {
		t.Fatalf("snapshot plan: %v; want the ext:: url of submodule.lib refused", err)
	}
}

// TestSubmoduleArgv: the guest command restricts git's transports and passes paths after "--".
func TestSubmoduleArgv(t *testing.T) {
	plan := SubmodulePlan{Fetch: []Submodule{{Path: "lib"}, {Path: "vendor/x"}}, Transports: TransportsBroker}
	argv, err := SubmoduleArgv("/home/u/src/w", plan)
	must(t, err)
	got := strings.Join(argv, " ")
	for _, want := range []string{"GIT_ALLOW_PROTOCOL=https ", "protocol.allow=never", "protocol.file.allow=never",
		"protocol.ext.allow=never", "protocol.https.allow=always", "transfer.fsckObjects=true", "--recursive -- lib vendor/x"} {
		if !strings.Contains(got, want) {
			t.Errorf("argv %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "protocol.git.allow") || strings.Contains(got, "protocol.ssh.allow") {
		t.Errorf("broker argv %q allows more than https", got)
	}
	for _, bad := range []SubmodulePlan{
		{Fetch: []Submodule{{Path: "-x"}}, Transports: TransportsFull},
		{Fetch: []Submodule{{Path: "../x"}}, Transports: TransportsFull},
		{Fetch: []Submodule{{Path: "x"}}, Transports: []string{"file"}},
	} {
		if argv, err := SubmoduleArgv("/d", bad); err == nil {
			t.Errorf("SubmoduleArgv(%+v) = %q, want an error", bad, argv)
		}
	}
	if _, err := SubmoduleArgv("rel", plan); err == nil {
		t.Error("a relative guest dir was accepted")
	}
}

// TestSubmodulesThroughBroker: in broker mode the box's git reaches an https submodule only
// through the broker (the real broker package, on loopback, with its allow-list): the
// submodule's server allowed, the fetch works; not allowed, the broker refuses it and nothing is
// checked out. The guest's git is pointed at the broker by its own config here (http.proxy);
// a real box gets the same proxy as https_proxy through the SSH channel.
func TestSubmodulesThroughBroker(t *testing.T) {
	root := hermetic(t)
	sub := filepath.Join(root, "sub")
	makeRepo(t, sub, map[string]string{"x": "through the broker\n"})
	bareCopy(t, root, sub, "sub")
	server := serveHTTPSServer(t, filepath.Join(root, "srv"), nil)
	g := newGuest(t)
	ca := g.Path("ca.pem")
	writeCA(t, server, ca)
	for i, tc := range []struct {
		name  string
		allow string
		ok    bool
	}{
		{"allowed", strings.TrimPrefix(server.URL, "https://"), true},
		{"not in the allow-list", "127.0.0.1:1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(bg())
			defer cancel()
			secret := broker.NewSecret()
			b, err := broker.New(broker.Config{Box: "t", Allow: []string{tc.allow}, Secret: []byte(secret)})
			must(t, err)
			ln, err := broker.Listen(ctx, "127.0.0.1:0")
			must(t, err)
			go b.Serve(ctx, ln)
			must(t, os.WriteFile(g.Path("home/.gitconfig"), []byte(fmt.Sprintf("[http]\n\tsslCAInfo = %s\n\tproxy = http://corral:%s@%s\n", ca, secret, ln.Addr())), 0o644))

			work := filepath.Join(root, fmt.Sprintf("work%d", i))
			superWithSubmodule(t, work, sub, server.URL+"/sub.git", nil)
			store := filepath.Join(os.Getenv("CORRAL_HOME"), "clones", fmt.Sprintf("w%d.git", i))
			if _, err := Fetch(bg(), work, store, Options{Cwd: root}); err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			plan, err := PlanSubmodules(store, SubmoduleOptions{Transports: TransportsBroker})
			if err != nil || len(plan.Fetch) != 1 || plan.Fetch[0].Transport != "https" {
				t.Fatalf("PlanSubmodules = %+v, %v; want lib over https", plan, err)
			}
			dir := g.Path(fmt.Sprintf("src/w%d", i))
			must(t, Deliver(bg(), g, store, DeliverOptions{Dir: dir}))
			err = UpdateSubmodules(bg(), g, dir, plan)
			got := inGuest(t, g, dir, "cat lib/x 2>/dev/null || true")
			if tc.ok && (err != nil || got != "through the broker") {
				t.Fatalf("UpdateSubmodules: %v, lib/x %q; want the submodule through the broker\n%s", err, got, g.Stderr())
			}
			if !tc.ok && (err == nil || got != "" || !strings.Contains(g.Stderr(), "403")) {
				t.Fatalf("UpdateSubmodules: %v, lib/x %q; want the broker to refuse it (403)\n%s", err, got, g.Stderr())
			}
		})
	}
}
