package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/internal/sandboxguest"
	"github.com/git-corral/git-corral/policy"
)

// TestCloneBrokerSkipsSubmoduleTransport: "git corral clone" into a broker-mode box (sandbox
// guest) delivers the checkout, skips a git:// submodule by name (broker mode fetches over https
// only) and runs nothing for it in the box.
func TestCloneBrokerSkipsSubmoduleTransport(t *testing.T) {
	gitBin, root := gitTestHome(t)
	src := filepath.Join(root, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	script := `git init -q -b main && echo hi > README && git add README && git commit -qm init &&
git update-index --add --cacheinfo 160000,$(git rev-parse HEAD),lib &&
printf '[submodule "lib"]\n\tpath = lib\n\turl = git://example.invalid/lib.git\n' > .gitmodules &&
git add .gitmodules && git commit -qm lib`
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "PATH=/usr/bin:/bin:"+filepath.Dir(gitBin), "GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@x")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	g, err := sandboxguest.New()
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	old := boxGuest
	boxGuest = func(_ context.Context, _ *app, req guestRequest) (guestBox, error) {
		return guestBox{Guest: g, Dir: g.Path(req.Box), Network: policy.NetworkBroker}, nil
	}
	defer func() { boxGuest = old }()
	var out, errOut strings.Builder
	a := &app{stdout: &out, stderr: &errOut, getenv: os.Getenv}
	if code := a.main(context.Background(), []string{"clone", "--json", src, filepath.Join(root, "dest")}); code != 0 {
		t.Fatalf("clone exited %d: %s\n%s", code, errOut.String(), g.Stderr())
	}
	var doc cloneDoc
	if err := json.Unmarshal([]byte(out.String()), &doc); err != nil {
		t.Fatal(err)
	}
	if !doc.Delivered || len(doc.Submodules) != 0 || len(doc.SubmodulesSkipped) != 1 || doc.SubmodulesSkipped[0].Path != "submodule.lib.url" {
		t.Errorf("clone doc %+v: want delivered, lib skipped", doc)
	}
	if !strings.Contains(errOut.String(), "submodule not fetched") || !strings.Contains(errOut.String(), "https") {
		t.Errorf("stderr %q does not warn about the skipped submodule", errOut.String())
	}
	if strings.Contains(g.Stderr(), "submodule") {
		t.Errorf("the guest ran a submodule command: %s", g.Stderr())
	}
}
