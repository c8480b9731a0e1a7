package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrustTableInSecurityMD fails when SECURITY.md's trust table is not the one the key table
// generates: run 'make security-table'.
func TestTrustTableInSecurityMD(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "SECURITY.md"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := ReplaceTrustTable(string(data))
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != want {
		t.Error("SECURITY.md's trust table is stale: run 'make security-table'")
	}
	for _, k := range Keys() {
		if !strings.Contains(string(data), "| `"+k.Name+"` | "+k.Class.String()+" |") {
			t.Errorf("SECURITY.md does not list %s as %s", k.Name, k.Class)
		}
	}
}

// TestTemplatesLoad: every example value in both templates is valid where the template puts
// it: the repository template, uncommented, loads clean as the repository layer, and the host
// template, uncommented, loads clean as the per-project file.
func TestTemplatesLoad(t *testing.T) {
	uncomment := func(s string) string {
		var b strings.Builder
		for _, line := range strings.Split(s, "\n") {
			if strings.HasPrefix(line, "#") && strings.Contains(line, " = ") && !strings.HasPrefix(line, "# ") {
				b.WriteString(line[1:] + "\n")
			}
		}
		return b.String()
	}
	f := newFixture(t)
	f.write("repo/scripts/provision.sh", "#!/bin/sh\n")
	repo := uncomment(Template(false))
	if n := strings.Count(repo, "\n"); n != len(keys)-countClass(TrustedOnly) {
		t.Errorf("repository template sets %d keys, want %d:\n%s", n, len(keys)-countClass(TrustedOnly), repo)
	}
	f.repo(repo)
	f.mustLoad()
	host := uncomment(Template(true))
	if n := strings.Count(host, "\n"); n != len(keys)-countClass(ProjectMayNarrow) {
		t.Errorf("host template sets %d keys, want %d", n, len(keys)-countClass(ProjectMayNarrow))
	}
	f.project(host)
	f.mustLoad()
}

func countClass(c Class) int {
	n := 0
	for _, k := range keys {
		if k.Class == c {
			n++
		}
	}
	return n
}
