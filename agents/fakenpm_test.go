package agents

import (
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeNPM is a fake npm program on disk (a process boundary): `view` prints REG/<spec>.view,
// `pack` copies REG/<spec>.tgz into --pack-destination. Every call appends its argv, working
// directory and npm_config_ignore_scripts to REG/log.
const fakeNPMScript = `#!/bin/sh
reg="$FAKE_NPM_REGISTRY"
echo "$* | cwd=$(pwd) | ignore_scripts=$npm_config_ignore_scripts" >> "$reg/log"
cmd=$1; shift
dest=
while [ $# -gt 0 ]; do
  case $1 in
    --pack-destination) dest=$2; shift 2;;
    --) spec=$2; break;;
    *) shift;;
  esac
done
key=$(printf %s "$spec" | tr '/@' '__')
case $cmd in
  view) [ -f "$reg/$key.view" ] || { echo "npm error 404 $spec" >&2; exit 1; }; cat "$reg/$key.view";;
  pack) cp "$reg/$key.tgz" "$dest/$key.tgz" || exit 1; printf '[{"filename":"%s.tgz"}]\n' "$key";;
  *) echo "fake npm: $cmd" >&2; exit 2;;
esac
`

// fakeRegistry is a directory the fake npm serves from.
type fakeRegistry struct {
	t   *testing.T
	dir string
	npm string
}

func newFakeRegistry(t *testing.T) *fakeRegistry {
	t.Helper()
	dir := t.TempDir()
	npm := filepath.Join(dir, "npm")
	if err := os.WriteFile(npm, []byte(fakeNPMScript), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FAKE_NPM_REGISTRY", dir)
	return &fakeRegistry{t: t, dir: dir, npm: npm}
}

func (r *fakeRegistry) key(spec Spec) string {
	return strings.NewReplacer("/", "_", "@", "_").Replace(spec.String())
}

// publish puts spec on the registry with files (paths under package/), published at when.
// The integrity it advertises is the tarball's own unless integrity is set.
func (r *fakeRegistry) publish(spec Spec, when time.Time, files []tarEntry, integrity string) {
	r.t.Helper()
	pj := tarEntry{Name: "package/package.json", Data: `{"name":"` + spec.Package + `","version":"` + spec.Version + `"}`}
	tgz := filepath.Join(r.dir, r.key(spec)+".tgz")
	makeTarball(r.t, tgz, append([]tarEntry{pj}, files...))
	if integrity == "" {
		data, _ := os.ReadFile(tgz)
		sum := sha512.Sum512(data)
		integrity = "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
	}
	view, _ := json.Marshal(map[string]any{
		"dist.integrity": integrity,
		"dist.tarball":   "https://registry.invalid/" + r.key(spec) + ".tgz",
		"time":           map[string]string{"created": "2020-01-01T00:00:00Z", spec.Version: when.UTC().Format(time.RFC3339)},
	})
	if err := os.WriteFile(filepath.Join(r.dir, r.key(spec)+".view"), view, 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// calls returns the logged npm invocations whose argv starts with verb.
func (r *fakeRegistry) calls(verb string) []string {
	data, _ := os.ReadFile(filepath.Join(r.dir, "log"))
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, verb+" ") {
			out = append(out, l)
		}
	}
	return out
}

// publishIntegrityOf rewrites spec's metadata to advertise the tarball as it now is on disk.
func (r *fakeRegistry) publishIntegrityOf(spec Spec, when time.Time) {
	r.t.Helper()
	data, err := os.ReadFile(filepath.Join(r.dir, r.key(spec)+".tgz"))
	if err != nil {
		r.t.Fatal(err)
	}
	sum := sha512.Sum512(data)
	view, _ := json.Marshal(map[string]any{
		"dist.integrity": "sha512-" + base64.StdEncoding.EncodeToString(sum[:]),
		"time":           map[string]string{spec.Version: when.UTC().Format(time.RFC3339)},
	})
	os.WriteFile(filepath.Join(r.dir, r.key(spec)+".view"), view, 0o644)
}
