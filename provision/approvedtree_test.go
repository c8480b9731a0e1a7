package provision

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBootRunsApprovedTree is issue #19 item 6: a script is approved with the files it pulls
// in, then every one of them is changed on the project mount before boot. The boot must run
// the approved bytes of each (sourced, run by bash, run by path, sourced beside "$0") and none
// of the changed ones, which the box user can read on the mount all the same (the control).
func TestBootRunsApprovedTree(t *testing.T) {
	needRoot(t)
	ns := testNetns(t, "cpvtree")
	ctx, h, top := reviewEnv(t)
	approved := map[string]string{
		"scripts/setup.sh": "#!/bin/sh\nset -e\n. ./scripts/lib.sh\nbash scripts/run.sh\n./scripts/tool.sh\n. \"$(dirname \"$0\")/near.sh\"\necho \"SETUP $LIB $NEAR\" >/tmp/setup.out\n",
		"scripts/lib.sh":   "LIB=approved-lib\n",
		"scripts/run.sh":   "echo RUN-approved >/tmp/run.out\n",
		"scripts/tool.sh":  "#!/bin/sh\necho TOOL-approved >/tmp/tool.out\n",
		"scripts/near.sh":  "NEAR=approved-near\n",
	}
	writeFiles(t, top, approved)
	req := Request{Top: top, Scripts: []string{"scripts/setup.sh"}, Network: "offline"}
	r, err := Review(ctx, h, "box", req)
	if err != nil {
		t.Fatal(err)
	}
	if err := Approve(ctx, h, r); err != nil {
		t.Fatal(err)
	}
	repo, err := CheckApproved(ctx, h, "box", req)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(repo[0].Files); n != 4 {
		t.Fatalf("approved files %v, want the 4 the script pulls in", repo[0].Files)
	}
	opts := privdropOptions()
	opts.Repo = repo
	g := newGuestRoot(t, opts)
	// The project mount as the boot finds it: every pulled-in file changed after the check.
	evil := map[string]string{
		"scripts/setup.sh": "echo EVIL-setup >/tmp/evil.out\n",
		"scripts/lib.sh":   "LIB=EVIL-lib; echo EVIL-lib >>/tmp/evil.out\n",
		"scripts/run.sh":   "echo EVIL-run >>/tmp/evil.out\n",
		"scripts/tool.sh":  "#!/bin/sh\necho EVIL-tool >>/tmp/evil.out\n",
		"scripts/near.sh":  "NEAR=EVIL-near; echo EVIL-near >>/tmp/evil.out\n",
	}
	writeFiles(t, filepath.Join(g.dir, "project"), evil)
	if err := os.Chmod(filepath.Join(g.dir, "project/scripts/tool.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := g.run(ns, prepHostile+`
install -d -o corral -g corral /home/corral/project
cp -r /corral/project/. /home/corral/project/ && chown -R corral:corral /home/corral/project
`+bootAll+`
for f in setup run tool evil; do echo "$f=$(cat /tmp/$f.out 2>/dev/null | tr '\n' ' ')"; done
echo "LIVE=$(runuser -u corral -- cat /home/corral/project/scripts/lib.sh)"
`)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"setup=SETUP approved-lib approved-near ", "run=RUN-approved ", "tool=TOOL-approved ", "evil=\n", "LIVE=LIB=EVIL-lib"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q\n%s\n%s", want, out, errOut)
		}
	}
}
