package home

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecurityMDListsEveryPlace keeps SECURITY.md's "What a box may mount" in step with the
// guard: every trusted place is named there, as the refusal names it.
func TestSecurityMDListsEveryPlace(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "SECURITY.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "## What a box may mount")
	if !ok {
		t.Fatal(`SECURITY.md has no section "What a box may mount"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	env := map[string]string{"LIMA_HOME": "/l", "GIT_CONFIG_GLOBAL": "/g/c", "GIT_CONFIG_SYSTEM": "/s/c",
		"XDG_CONFIG_HOME": "/x", "XDG_DATA_HOME": "/d", "XDG_CACHE_HOME": "/c"}
	places := append(Home{Dir: "/h/.corral"}.userPlaces("/h", func(k string) string { return env[k] }), systemPlaces()...)
	for _, pl := range places {
		want := pl.name
		if _, rest, ok := strings.Cut(pl.name, "("); ok {
			want, _, _ = strings.Cut(rest, ")")
		} else if i := strings.Index(pl.name, "$"); i >= 0 {
			want = pl.name[i:]
		} else if strings.HasPrefix(pl.path, "/") && !strings.HasPrefix(pl.path, "/h/") {
			want = pl.path
			if strings.HasPrefix(want, "/lib") {
				want = "/lib*"
			}
		}
		if !strings.Contains(section, "`"+want+"`") {
			t.Errorf("SECURITY.md's mount section does not name %s as `%s`", pl.name, want)
		}
	}
}
