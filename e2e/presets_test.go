package e2e

// The egress presets group (issue #34, secure by default): a broker-mode box with no egress
// configuration installs a Node and a Python project's dependencies from stand-in registries on
// the host's loopback, reached by the names the presets list (registry.npmjs.org, pypi.org,
// files.pythonhosted.org), and an unlisted name served by the same server is refused.

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// standInAddr is the loopback address the stand-in registries listen on, at port 443 (the
// presets name port 443): the broker's test seam answers it for their names.
const standInAddr = "127.77.0.1"

// standInNames are the registries' real names; unlisted.example.net is the control, served by
// the same server but named by no preset.
var standInNames = []string{"registry.npmjs.org", "pypi.org", "files.pythonhosted.org", "unlisted.example.net"}

// standIn is the registries' server: what it served, by host and path.
type standIn struct {
	mu   sync.Mutex
	hits []string
}

func (s *standIn) saw(prefix string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.hits {
		if strings.HasPrefix(h, prefix) {
			return true
		}
	}
	return false
}

// TestPresetsInstall is the must-show of issue #34's point 3. The box's only configuration is
// the trusted per-project file's network = "broker" (the suite's global file says full so the
// older groups keep their boxes; with no file at all broker is the default, which the first
// subtest shows): no egress, no egress_presets; the box resumes the broker golden base. Node
// (the host's) and pip (Debian's wheel) are copied into the project, since the base image has
// neither npm nor pip.
func TestPresetsInstall(t *testing.T) {
	group(t)
	if !suite.asRoot {
		t.Fatal("the stand-in registries listen on port 443 of the host's loopback: run the suite as root")
	}
	dir := newProject(t, "presets")
	box := boxName(t, dir)
	cleanupBox(t, box)

	reg := &standIn{}
	caPEM := startStandIns(t, reg, buildNpmTarball(t), buildWheel(t))
	var seam []string
	for _, n := range standInNames {
		seam = append(seam, n+"="+standInAddr)
	}
	setGroupEnv(t, "CORRAL_TEST_BROKER_HOSTS="+strings.Join(seam, ","))

	t.Run("with no configuration at all, a new box is broker mode with every preset", func(t *testing.T) {
		fresh, err := os.MkdirTemp(e2eBase, "fresh-home-") // the test user must reach it
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(fresh) })
		if err := chown(fresh); err != nil {
			t.Fatal(err)
		}
		r := corral(t, dir, []string{"CORRAL_HOME=" + fresh}, "config", "--json")
		var doc struct {
			Settings []struct {
				Key     string   `json:"key"`
				Value   any      `json:"value"`
				Origin  string   `json:"origin"`
				Origins []string `json:"origins"`
			} `json:"settings"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
			t.Fatalf("config --json: %v: %s", err, r.stdout)
		}
		from := map[string]string{}
		for _, s := range doc.Settings {
			switch s.Key {
			case "network":
				if s.Value != "broker" || s.Origin != "default" {
					t.Errorf("network = %v (%s), want broker (default)", s.Value, s.Origin)
				}
			case "egress":
				for i, v := range s.Value.([]any) {
					from[v.(string)] = s.Origins[i]
				}
			}
		}
		for host, want := range map[string]string{"registry.npmjs.org:443": "preset npm", "pypi.org:443": "preset pypi", "files.pythonhosted.org:443": "preset pypi"} {
			if from[host] != want {
				t.Errorf("egress %s: origin %q, want %q (all: %v)", host, from[host], want, from)
			}
		}
	})

	writeProjectConfig(t, box, "network = \"broker\"\n")
	writeFile(t, filepath.Join(dir, "ca.pem"), caPEM, 0o644)
	writeFile(t, filepath.Join(dir, "package.json"), `{"name":"presets-demo","version":"1.0.0","private":true,"dependencies":{"corral-demo-dep":"1.0.0"}}`+"\n", 0o644)
	copyTool(t, "/usr/bin/node", filepath.Join(dir, "tools", "node"))
	copyTool(t, "/usr/lib/node_modules/npm", filepath.Join(dir, "tools", "npm"))
	pipWheels, _ := filepath.Glob("/usr/share/python-wheels/pip-*.whl")
	if len(pipWheels) == 0 {
		t.Fatal("no pip wheel under /usr/share/python-wheels: scripts/setup.sh installs python3-pip-whl")
	}
	pipWhl := filepath.Join("tools", filepath.Base(pipWheels[0]))
	copyTool(t, pipWheels[0], filepath.Join(dir, pipWhl))

	npmInstall := "cd " + dir + " && tools/node tools/npm/bin/npm-cli.js install --cafile ca.pem --no-audit --no-fund --no-update-notifier --cache /tmp/npm-cache" +
		" && tools/node -e 'console.log(require(\"corral-demo-dep\"))'"
	pipInstall := "cd " + dir + " && python3 " + pipWhl + "/pip install --cert ca.pem --no-cache-dir --disable-pip-version-check --target /tmp/pysite corral-demo==1.0" +
		" && PYTHONPATH=/tmp/pysite python3 -c 'import corral_demo; print(corral_demo.MARK)'"
	// probe prints NAME=CODE for https://HOST/PATH through the broker: 000 when the tunnel was
	// refused (curl then says "CONNECT tunnel failed, response 403" on stderr).
	probe := func(name, host, path string) string {
		return "echo " + name + "=$(curl -sS -o /dev/null -w '%{http_code}' --cacert " + dir + "/ca.pem https://" + host + path + "); "
	}

	t.Run("npm install fetches from the npm preset's registry", func(t *testing.T) {
		r := corral(t, dir, nil, "run", "--yes", "--", "bash", "-c", npmInstall)
		if r.code != 0 || !strings.Contains(r.stdout, "corral-npm-ok") {
			t.Fatalf("npm install: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		if !reg.saw("registry.npmjs.org /corral-demo-dep/-/corral-demo-dep-1.0.0.tgz") {
			t.Errorf("the stand-in npm registry never served the tarball: %v", reg.hits)
		}
	})
	t.Run("pip install fetches from the pypi preset's index and file host", func(t *testing.T) {
		r := corral(t, dir, nil, "run", "--", "bash", "-c", pipInstall)
		if r.code != 0 || !strings.Contains(r.stdout, "corral-pip-ok") {
			t.Fatalf("pip install: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		if !reg.saw("pypi.org /simple/corral-demo/") || !reg.saw("files.pythonhosted.org /packages/") {
			t.Errorf("the stand-in PyPI did not serve the index and the wheel: %v", reg.hits)
		}
	})
	t.Run("an unlisted host is refused, and logged; the same server by a preset's name answers", func(t *testing.T) {
		r := corral(t, dir, nil, "run", "--", "bash", "-c", probe("unlisted", "unlisted.example.net", "/simple/corral-demo/")+probe("pypi", "pypi.org", "/simple/corral-demo/"))
		if !strings.Contains(r.stdout, "unlisted=000") || !strings.Contains(r.stderr+r.stdout, "response 403") || !strings.Contains(r.stdout, "pypi=200") {
			t.Fatalf("stdout %q, stderr %q: want the unlisted host refused with a 403 and pypi.org answering 200", r.stdout, r.stderr)
		}
		if reg.saw("unlisted.example.net ") {
			t.Errorf("the unlisted host reached the server: %v", reg.hits)
		}
		assertEgressDecision(t, dir, "unlisted.example.net", "deny", "host not in allow-list")
		assertEgressDecision(t, dir, "pypi.org", "allow", "")
	})
	t.Run("the repository narrows the presets: egress_presets = [\"npm\"] drops PyPI", func(t *testing.T) {
		writeFile(t, filepath.Join(dir, ".corral.toml"), "egress_presets = [\"npm\"]\n", 0o644)
		r := corral(t, dir, nil, "run", "--", "bash", "-c", probe("pypi", "pypi.org", "/simple/corral-demo/")+probe("npm", "registry.npmjs.org", "/corral-demo-dep"))
		if !strings.Contains(r.stdout, "pypi=000") || !strings.Contains(r.stdout, "npm=200") {
			t.Fatalf("stdout %q, stderr %q: want pypi.org refused and the npm registry answering 200", r.stdout, r.stderr)
		}
		assertEgressDecision(t, dir, "pypi.org", "deny", "host not in allow-list")
		if !strings.Contains(r.stderr, "egress allow-list of box "+box+" changed") {
			t.Errorf("the broker was not restarted with the narrowed list: %s", r.stderr)
		}
	})
}

// assertEgressDecision finds host in git corral egress --json with the decision (and, for a
// refusal, the reason in the raw log line).
func assertEgressDecision(t *testing.T, dir, host, decision, reason string) {
	t.Helper()
	r := corral(t, dir, nil, "egress", "--json")
	var doc struct {
		Log          string `json:"log"`
		Destinations []struct {
			Host     string `json:"host"`
			Decision string `json:"decision"`
		} `json:"destinations"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("egress --json: %v: %s", err, r.stdout)
	}
	for _, d := range doc.Destinations {
		if strings.HasPrefix(d.Host, host) && d.Decision == decision {
			if reason != "" {
				all, err := os.ReadFile(doc.Log)
				if err != nil || !strings.Contains(string(all), `"host":"`+host+`","port":443,"decision":"deny","reason":"`+reason+`"`) {
					t.Errorf("the egress log %s has no refusal %q for %s: %v", doc.Log, reason, host, err)
				}
			}
			return
		}
	}
	t.Errorf("egress --json has no %s decision for %s: %s", decision, host, r.stdout)
}

// copyTool copies a host file or directory into the project, owned by the test user.
func copyTool(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp %s: %v: %s", src, err, out)
	}
	if suite.asRoot {
		if out, err := exec.Command("chown", "-R", fmt.Sprintf("%d:%d", suite.uid, suite.gid), filepath.Join(filepath.Dir(dst))).CombinedOutput(); err != nil {
			t.Fatalf("chown: %v: %s", err, out)
		}
	}
}

// startStandIns serves the stand-in registries over TLS on standInAddr:443 with a certificate
// for every name in standInNames, signed by a CA made here; it returns the CA in PEM.
func startStandIns(t *testing.T, reg *standIn, tgz, whl []byte) string {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "corral e2e stand-in CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: standInNames[0]}, DNSNames: standInNames,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", standInAddr+":443")
	if err != nil {
		t.Fatalf("listen on %s:443 for the stand-in registries: %v", standInAddr, err)
	}
	srv := &http.Server{Handler: standInHandler(reg, tgz, whl),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{leafDER}, PrivateKey: key}}}}
	go srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { srv.Close() })
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}))
}

// standInHandler answers as the npm registry (packument, tarball), PyPI's simple index and its
// file host, each only under its own name, and records every request.
func standInHandler(reg *standIn, tgz, whl []byte) http.Handler {
	sha1sum, sha512sum, whlSum := sha1.Sum(tgz), sha512.Sum512(tgz), sha256.Sum256(whl)
	const tgzPath = "/corral-demo-dep/-/corral-demo-dep-1.0.0.tgz"
	whlPath := "/packages/c0/corral_demo-1.0-py3-none-any.whl"
	packument, _ := json.Marshal(map[string]any{
		"name": "corral-demo-dep", "dist-tags": map[string]string{"latest": "1.0.0"},
		"versions": map[string]any{"1.0.0": map[string]any{"name": "corral-demo-dep", "version": "1.0.0", "main": "index.js",
			"dist": map[string]string{"tarball": "https://registry.npmjs.org" + tgzPath, "shasum": hex.EncodeToString(sha1sum[:]),
				"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sha512sum[:])}}},
	})
	index := fmt.Sprintf("<!DOCTYPE html><html><body><a href=\"https://files.pythonhosted.org%s#sha256=%s\">corral_demo-1.0-py3-none-any.whl</a></body></html>\n",
		whlPath, hex.EncodeToString(whlSum[:]))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := strings.Cut(r.Host, ":")
		reg.mu.Lock()
		reg.hits = append(reg.hits, host+" "+r.URL.Path)
		reg.mu.Unlock()
		switch {
		case host == "registry.npmjs.org" && r.URL.Path == "/corral-demo-dep":
			w.Header().Set("Content-Type", "application/json")
			w.Write(packument)
		case host == "registry.npmjs.org" && r.URL.Path == tgzPath:
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(tgz)
		case host == "pypi.org" && (r.URL.Path == "/simple/corral-demo/" || r.URL.Path == "/simple/corral-demo"):
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, index)
		case host == "files.pythonhosted.org" && r.URL.Path == whlPath:
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(whl)
		default:
			http.NotFound(w, r)
		}
	})
}

// buildNpmTarball builds corral-demo-dep 1.0.0 as npm publishes it: a gzipped tar under package/.
func buildNpmTarball(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range []struct{ name, body string }{
		{"package/package.json", `{"name":"corral-demo-dep","version":"1.0.0","main":"index.js"}` + "\n"},
		{"package/index.js", "module.exports = \"corral-npm-ok\";\n"},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), ModTime: time.Unix(499162800, 0), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(f.body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	gz.Close()
	return buf.Bytes()
}

// buildWheel builds corral-demo 1.0 as a pure-Python wheel (PEP 427), RECORD and all.
func buildWheel(t *testing.T) []byte {
	t.Helper()
	files := []struct{ name, body string }{
		{"corral_demo/__init__.py", "MARK = \"corral-pip-ok\"\n"},
		{"corral_demo-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: corral-demo\nVersion: 1.0\n"},
		{"corral_demo-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: corral-e2e\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var record strings.Builder
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		w, err := zw.Create(f.name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(f.body))
		sum := sha256.Sum256([]byte(f.body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f.name, base64.RawURLEncoding.EncodeToString(sum[:]), len(f.body))
	}
	record.WriteString("corral_demo-1.0.dist-info/RECORD,,\n")
	w, _ := zw.Create("corral_demo-1.0.dist-info/RECORD")
	w.Write([]byte(record.String()))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
