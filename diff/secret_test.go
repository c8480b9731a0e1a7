package diff

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// secret is the content of an ignored .env; the probes below look for it in the repository.
const secret = "API_TOKEN=corral-canary-7f3a9c2e\n"

// secretProbe says where, if anywhere, the repository holds the secret: a ref that reaches its
// blob, or any object (reachable or not, loose or packed) whose bytes contain it.
func secretProbe(r *testRepo) []string {
	r.t.Helper()
	var found []string
	hex := plumbingHex(blobHash([]byte(secret)))
	if refs := r.git("for-each-ref", "--format=%(refname)"); refs != "" {
		for _, ref := range strings.Split(refs, "\n") {
			if strings.Contains(r.git("rev-list", "--objects", ref), hex) {
				found = append(found, "ref "+ref)
			}
		}
	}
	all := r.git("cat-file", "--batch-all-objects", "--batch", "--unordered")
	if strings.Contains(all, strings.TrimSpace(secret)) {
		found = append(found, "an object's bytes")
	}
	return found
}

// TestRecordKeepsSecretsOutOfRepository: with .env ignored and a secret in it, recording a
// session base leaves no ref reaching its blob and no object holding its bytes. The control
// commits the same file by hand, and the same probe finds it there.
func TestRecordKeepsSecretsOutOfRepository(t *testing.T) {
	r := newRepo(t, map[string]string{".gitignore": ".env\n", "Makefile": "all:\n"})
	r.write(".env", secret)
	if found := secretProbe(r); len(found) != 0 {
		t.Fatalf("the secret is in the repository before any record: %v", found)
	}
	r.record()
	if found := secretProbe(r); len(found) != 0 {
		t.Errorf("after a record the repository holds the ignored secret: %v", found)
	}
	// The base still knows .env: a change to it is shown against the recorded bytes.
	r.write(".env", secret+"EXTRA=1\n")
	rep := r.compare(Options{All: true})
	var detail []string
	for _, f := range rep.Findings {
		detail = append(detail, f.Detail...)
	}
	for _, c := range rep.Changes {
		detail = append(detail, c.Detail...)
	}
	if len(rep.Changes) != 1 || rep.Changes[0].Path != ".env" || !slices.Contains(detail, "+EXTRA=1") {
		t.Errorf("the change to .env is not shown against the base: %+v, detail %q", rep.Changes, detail)
	}
	// Control: the probe is real.
	r.write(".env", secret)
	r.git("add", "-f", ".env")
	r.git("commit", "-q", "-m", "control")
	if found := secretProbe(r); len(found) < 2 {
		t.Errorf("control: a committed .env was not found by both probes: %v", found)
	}
}

var looseObject = regexp.MustCompile(`^[0-9a-f]{2}/[0-9a-f]{38}$`)

// looseObjects lists the repository's loose objects.
func looseObjects(t *testing.T, gitDir string) []string {
	t.Helper()
	var out []string
	root := filepath.Join(gitDir, "objects")
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if rel, _ := filepath.Rel(root, p); !d.IsDir() && looseObject.MatchString(filepath.ToSlash(rel)) {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRecordWritesNoObjects: recording a base (with untracked, ignored and modified files and
// directories) adds no object to the repository. The control writes one with git hash-object,
// and the same count sees it.
func TestRecordWritesNoObjects(t *testing.T) {
	r := newRepo(t, baseFiles)
	r.write(".envrc", "export X=1\n")
	r.write("new/dir/a.txt", "untracked\n")
	r.write("Makefile", "all:\n\techo changed\n")
	r.write("ignored/dep.js", "dependency\n")
	gitDir := filepath.Join(r.dir, ".git")
	before := len(looseObjects(t, gitDir))
	r.record()
	r.record()
	after := len(looseObjects(t, gitDir))
	if after != before {
		t.Errorf("recording added %d loose objects to the repository", after-before)
	}
	r.write("control.txt", "never recorded\n")
	r.git("hash-object", "-w", "--no-filters", "control.txt")
	if n := len(looseObjects(t, gitDir)); n != after+1 {
		t.Errorf("control: git hash-object -w added %d loose objects, want 1", n-after)
	}
}
