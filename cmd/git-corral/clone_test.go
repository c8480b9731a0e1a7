package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/clone"
	"github.com/git-corral/git-corral/diff"
	"github.com/git-corral/git-corral/internal/sandboxguest"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/project"
)

// TestCloneAndFetchWithSandboxGuest runs "git corral clone" and "git corral fetch" with the box
// bound to a sandbox guest (real git, as user nobody when root): the checkout exists only in
// the guest, and the guest's commit comes back as refs/corral/<box>/main in the store.
func TestCloneAndFetchWithSandboxGuest(t *testing.T) {
	gitBin, root := gitTestHome(t)
	run := func(dir string, args ...string) string {
		cmd := exec.Command(gitBin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@x")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	src := filepath.Join(root, "src")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(src, 0o755))
	run(src, "init", "-q", "-b", "main")
	must(os.WriteFile(filepath.Join(src, "README"), []byte("hi\n"), 0o644))
	run(src, "add", "-A")
	run(src, "commit", "-q", "-m", "init")

	g, err := sandboxguest.New()
	must(err)
	defer g.Close()
	old := boxGuest
	boxGuest = func(_ context.Context, _ *app, req guestRequest) (guestBox, error) {
		return guestBox{Guest: g, Dir: g.Path(req.Box), Network: policy.NetworkFull}, nil
	}
	defer func() { boxGuest = old }()

	var out, errOut bytes.Buffer
	a := &app{stdout: &out, stderr: &errOut, getenv: os.Getenv}
	dest := filepath.Join(root, "dest")
	if code := a.main(context.Background(), []string{"clone", "--json", src, dest}); code != 0 {
		t.Fatalf("clone exited %d: %s\n%s", code, errOut.String(), g.Stderr())
	}
	var doc cloneDoc
	must(json.Unmarshal(out.Bytes(), &doc))
	if !doc.Delivered || doc.Branch != "main" {
		t.Errorf("clone doc %+v", doc)
	}
	entries, _ := os.ReadDir(dest)
	if len(entries) != 1 || entries[0].Name() != clone.RecordName {
		t.Errorf("DIR holds %v, want only %s", entries, clone.RecordName)
	}
	guestDir := g.Path(doc.Box)
	var gout bytes.Buffer
	code, err := g.Exec(context.Background(), []string{"sh", "-c", "cd \"$1\" && echo more >> README && git commit -qam more && git rev-parse HEAD", "x", guestDir}, nil, &gout)
	if err != nil || code != 0 {
		t.Fatalf("guest commit: %d %v %s", code, err, g.Stderr())
	}

	out.Reset()
	a = &app{stdout: &out, stderr: &errOut, getenv: os.Getenv, dir: dest}
	if code := a.main(context.Background(), []string{"fetch", "--json"}); code != 0 {
		t.Fatalf("fetch exited %d: %s\n%s", code, errOut.String(), g.Stderr())
	}
	var fd fetchDoc
	must(json.Unmarshal(out.Bytes(), &fd))
	want := "refs/corral/" + doc.Box + "/main"
	if len(fd.Refs) != 1 || fd.Refs[0].Name != want || fd.Refs[0].Hash != strings.TrimSpace(gout.String()) {
		t.Errorf("fetch refs %+v, want %s at %s", fd.Refs, want, gout.String())
	}
	if got := run(doc.Store, "show", want+":README"); got != "hi\nmore" {
		t.Errorf("fetched README %q", got)
	}

	// diff in the clone dir reviews the fetched branch against the delivered one, from the store.
	out.Reset()
	a = &app{stdout: &out, stderr: &errOut, getenv: os.Getenv, dir: dest}
	if code := a.main(context.Background(), []string{"diff", want}); code != 0 {
		t.Fatalf("diff exited %d: %s", code, errOut.String())
	}
	for _, w := range []string{"modified README", "+more", "no changes to host-executed files"} {
		if !strings.Contains(strings.Join(strings.Fields(out.String()), " "), w) {
			t.Errorf("diff output lacks %q:\n%s", w, out.String())
		}
	}
	// The control for --exit-code below: no finding, exit 0.
	if code := a.main(context.Background(), []string{"diff", "--exit-code", want}); code != 0 {
		t.Errorf("diff --exit-code without findings exited %d: %s", code, errOut.String())
	}
	// A change to a host-executed file is listed first as a finding.
	code, err = g.Exec(context.Background(), []string{"sh", "-c", "cd \"$1\" && echo 'all:; id' > Makefile && git add Makefile && git commit -qm mk", "x", guestDir}, nil, &gout)
	if err != nil || code != 0 {
		t.Fatalf("guest commit: %d %v %s", code, err, g.Stderr())
	}
	if code := a.main(context.Background(), []string{"fetch"}); code != 0 {
		t.Fatalf("fetch exited %d: %s", code, errOut.String())
	}
	out.Reset()
	if code := a.main(context.Background(), []string{"diff", "--json", want}); code != 0 {
		t.Fatalf("diff --json exited %d: %s", code, errOut.String())
	}
	var dd diff.StoreReport
	must(json.Unmarshal(out.Bytes(), &dd))
	if len(dd.Findings) != 1 || dd.Findings[0].Path != "Makefile" || len(dd.Files) != 2 {
		t.Errorf("diff --json findings %+v files %+v, want Makefile flagged among 2 files", dd.Findings, dd.Files)
	}
	// --exit-code in a clone directory exits 1 on a finding, quietly (issue #20).
	errOut.Reset()
	if code := a.main(context.Background(), []string{"diff", "--exit-code", want}); code != 1 || strings.Contains(errOut.String(), "exit status") {
		t.Errorf("diff --exit-code with a finding exited %d (stderr %q), want 1 and no message", code, errOut.String())
	}
}

// gitTestHome finds git (skipping the test without it) and points HOME, CORRAL_HOME and git's
// global and system config into a fresh temporary directory, which it returns with git's path.
func gitTestHome(t *testing.T) (gitBin, root string) {
	t.Helper()
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	root = t.TempDir()
	t.Setenv("HOME", root)
	t.Setenv("CORRAL_HOME", filepath.Join(root, ".corral"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(root, "gitconfig"))
	return gitBin, root
}

// TestStatusInCloneDir: in a clone directory (a clone record, no checkout) status names the
// clone's box, as run and start do there; the control, the same directory without its record,
// is "not in a git repository".
func TestStatusInCloneDir(t *testing.T) {
	root := t.TempDir()
	dest := filepath.Join(root, "untrusted")
	if err := os.MkdirAll(filepath.Join(dest, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"CORRAL_HOME": filepath.Join(root, "corral"), "HOME": root, "PATH": "/nonexistent"}
	status := func(dir string) (int, string, string) {
		var out, errOut bytes.Buffer
		a := &app{stdout: &out, stderr: &errOut, getenv: func(k string) string { return env[k] }, dir: dir}
		code := a.main(context.Background(), []string{"status", "--json"})
		return code, out.String(), errOut.String()
	}
	if code, _, errOut := status(dest); code == 0 || !strings.Contains(errOut, "not a git repository") {
		t.Fatalf("control without a clone record: exit %d: %s", code, errOut)
	}
	real, err := filepath.EvalSymlinks(dest)
	if err != nil {
		t.Fatal(err)
	}
	want := project.BoxName(real)
	if err := clone.WriteRecord(dest, clone.Record{Box: want, Source: "https://example.invalid/r.git", GuestDir: "/home/u/r", Branch: "main"}); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{dest, filepath.Join(dest, "sub")} {
		code, out, errOut := status(dir)
		var r struct {
			Box string `json:"box"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.Box != want {
			t.Fatalf("status in %s: exit %d, box %q, want %q: %s %s", dir, code, r.Box, want, out, errOut)
		}
	}
}
