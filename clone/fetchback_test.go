package clone

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// cannedGuest is a box whose fetch-back command prints fixed bytes: a hostile box.
type cannedGuest struct{ out []byte }

func (c cannedGuest) Exec(_ context.Context, _ []string, _ io.Reader, stdout io.Writer) (int, error) {
	_, err := stdout.Write(c.out)
	return 0, err
}

// realBundle builds a bundle of all branches of the bare repository g with the real git (the
// box's side) and returns its bytes.
func realBundle(t *testing.T, g string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "b.bundle")
	git(t, g, "bundle", "create", "-q", out, "--branches")
	data, err := os.ReadFile(out)
	must(t, err)
	return data
}

// TestFetchBackRefusesHostileBox: whatever a box sends back, hostile framing, ref names, trees
// or sizes are refused, and the host repository's refs and packs are untouched.
func TestFetchBackRefusesHostileBox(t *testing.T) {
	root := hermetic(t)
	work := filepath.Join(root, "work")
	makeRepo(t, work, map[string]string{"README": "hi\n"})
	host := bareCopy(t, root, work, "host")
	good := realBundle(t, host)
	mkHostile := func(name string, build func(t *testing.T, g string)) []byte {
		g := filepath.Join(root, "box-"+name+".git")
		git(t, root, "init", "-q", "--bare", g)
		build(t, g)
		return realBundle(t, g)
	}
	header, pack, _ := strings.Cut(string(good), "\n\n")
	hash := strings.Fields(strings.Split(header, "\n")[1])[0]
	cases := []struct {
		name  string
		out   []byte
		class Class
		l     Limits
	}{
		{"not a bundle", []byte("PACK...."), ClassBundle, Limits{}},
		{"prerequisites", []byte("# v2 git bundle\n-" + hash + " x\n" + hash + " refs/heads/main\n\n" + pack), ClassBundle, Limits{}},
		{"unknown capability", []byte("# v3 git bundle\n@filter=blob:none\n" + hash + " refs/heads/main\n\n" + pack), ClassBundle, Limits{}},
		{"hostile ref name", []byte("# v2 git bundle\n" + hash + " refs/heads/a..b\n\n" + pack), ClassRef, Limits{}},
		{"ref with escape", []byte("# v2 git bundle\n" + hash + " refs/heads/\x1b]8;;x\x07\n\n" + pack), ClassRef, Limits{}},
		{"ref not in pack", []byte("# v2 git bundle\n" + strings.Repeat("1", 40) + " refs/heads/main\n\n" + pack), ClassRef, Limits{}},
		{"hostile tree", mkHostile("tree", treeWith(dirWith(".git", "config", "100644", "[core]\n\tfsmonitor = touch /tmp/pwned\n"))), ClassTree, Limits{}},
		{"hostile gitmodules", mkHostile("gm", treeWith(gitmodules("[submodule \"x\"]\n\tpath = x\n\turl = ext::sh -c id\n"))), ClassGitmodules, Limits{}},
		{"too big", good, ClassLimit, Limits{MaxPackBytes: 64}},
		{"too many objects", good, ClassLimit, Limits{MaxObjects: 1}},
	}
	packsBefore, _ := filepath.Glob(filepath.Join(host, "objects", "pack", "*"))
	refsBefore := git(t, host, "for-each-ref")
	check := recordGit(t, root)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := FetchBack(bg(), cannedGuest{c.out}, host, FetchBackOptions{Dir: "/box/p", Box: "host-1", Limits: c.l})
			var re *RefusedError
			if !errors.As(err, &re) || !re.Has(c.class) {
				t.Fatalf("FetchBack: %v, want a %s refusal", err, c.class)
			}
			t.Logf("refused: %v", err)
		})
	}
	check()
	packsAfter, _ := filepath.Glob(filepath.Join(host, "objects", "pack", "*"))
	if !reflect.DeepEqual(packsBefore, packsAfter) {
		t.Errorf("packs changed:\n%v\n%v", packsBefore, packsAfter)
	}
	if got := git(t, host, "for-each-ref"); got != refsBefore {
		t.Errorf("refs changed:\n%s", got)
	}
	if left, _ := filepath.Glob(filepath.Join(host, "corral-fetch-*")); len(left) > 0 {
		t.Errorf("staging left behind: %v", left)
	}
	// The honest bundle is accepted by the same code.
	res, err := FetchBack(bg(), cannedGuest{good}, host, FetchBackOptions{Dir: "/box/p", Box: "host-1"})
	if err != nil || len(res.Refs) != 1 || res.Refs[0].Name != "refs/corral/host-1/main" {
		t.Errorf("good bundle: %+v, %v", res, err)
	}
}
