package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// apiKeyMarker begins the route's key: the guest looks for it (never for the whole key, which
// it must not be given) in its environment, every argv and its files. The script builds it
// from two halves so that its own argv does not hold it.
const apiKeyMarker = "CORRAL-E2E-APIKEY-"

// apiFetch sends one plain-HTTP request through $http_proxy with bash's /dev/tcp (the base
// image has no curl): fetch URL HOST [HEADER], printing the status line and body.
const apiFetch = `u=${http_proxy#http://}; cred=${u%@*}; hp=${u#*@}; host=${hp%:*}; port=${hp#*:}
extra=""; [ -n "$3" ] && extra="$3"$'\r\n'
exec 3<>"/dev/tcp/$host/$port" || exit 9
printf 'GET %s HTTP/1.1\r\nHost: %s\r\n%sProxy-Authorization: Basic %s\r\nConnection: close\r\n\r\n' "$1" "$2" "$extra" "$(printf %s "$cred" | base64 -w0)" >&3
cat <&3`

// apiLeakScript prints how many places in the guest hold the marker: the session's
// environment, any process's argv, and files the box user or root keeps.
const apiLeakScript = `m="CORRAL-E2E-"; m="${m}APIKEY-"
echo "ENV=$(env | grep -cF -f <(printf '%s\n' "$m"))"
echo "ARGV=$(for f in /proc/[0-9]*/cmdline; do { tr '\0' ' ' <"$f"; } 2>/dev/null; echo; done | grep -cF -f <(printf '%s\n' "$m"))"
printf '%s\n' "$m" | grep -rlsF -f /dev/stdin /etc /usr/local /var/log /var/lib /root /home /tmp /var/tmp "$PWD" 2>/dev/null | sed 's/^/ON-DISK /'
echo "BASE=${MYAPI_BASE:-unset}"
echo done`

// TestKeysAPIBrokers: a broker-mode box calls an api_brokers route and gets the answer of an
// upstream on the host's loopback (named by an egress address entry) that answers 200 only to
// the key the host holds; the key is in no guest environment, argv or file, and in no host
// file under CORRAL_HOME or host argv. Controls: the same upstream, reached directly through
// the broker with a guessed key, answers 401; the route call without the route is refused.
// The same box then runs the git push scenario (gitPushOnBox) against a git server on the
// host's loopback.
func TestKeysAPIBrokers(t *testing.T) {
	group(t)
	tail := make([]byte, 12)
	rand.Read(tail)
	key := apiKeyMarker + hex.EncodeToString(tail)
	var good, bad atomic.Int32
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != key {
			bad.Add(1)
			http.Error(w, "wrong key", http.StatusUnauthorized)
			return
		}
		good.Add(1)
		fmt.Fprintf(w, "upstream-saw-the-host-key %s", r.URL.Path)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	upstream := ln.Addr().String()

	dir := newProject(t, "keysapi")
	box := boxName(t, dir)
	cleanupBox(t, box)
	route := fmt.Sprintf(`network = "broker"
egress = [%q]
api_brokers = ["myapi"]

[api_routes.myapi]
upstream = "http://%s/v1"
header = "X-Api-Key"
value_env = "CORRAL_E2E_API_KEY"
allow = ["GET /items/*"]
base_url_env = "MYAPI_BASE"
`, upstream, upstream)
	writeProjectConfig(t, box, route)
	// Every host process from here on is watched for the key on its argv.
	scan := watchArgv(t, key)
	push := startGitPushServer(t) // the git push scenario's server (gitpush_test.go)
	setGroupEnv(t, append([]string{"CORRAL_E2E_API_KEY=" + key}, push.env()...)...)

	t.Run("the route answers with the host's key", func(t *testing.T) {
		r := corral(t, dir, nil, "run", "--yes", "--", "bash", "-c", apiFetch, "fetch", "http://myapi.api.corral/items/7", "myapi.api.corral", "X-Api-Key: box-guess")
		if !strings.Contains(r.stdout, " 200 ") || !strings.Contains(r.stdout, "upstream-saw-the-host-key /v1/items/7") || good.Load() == 0 {
			t.Fatalf("exit %d, stdout %q: the route did not answer with the upstream's 200", r.code, r.stdout)
		}
	})
	t.Run("control: the upstream itself, with a guessed key, answers 401", func(t *testing.T) {
		before := bad.Load()
		r := corral(t, dir, nil, "run", "--", "bash", "-c", apiFetch, "fetch", "http://"+upstream+"/v1/items/7", upstream, "X-Api-Key: box-guess")
		if !strings.Contains(r.stdout, " 401 ") || bad.Load() == before {
			t.Errorf("exit %d, stdout %q: want the upstream's 401 through the broker", r.code, r.stdout)
		}
	})
	t.Run("the key is nowhere in the box", func(t *testing.T) {
		r := corral(t, dir, nil, "run", "--", "bash", "-c", apiLeakScript)
		if r.code != 0 || !strings.Contains(r.stdout, "done") {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		for _, want := range []string{"ENV=0", "ARGV=0", "BASE=http://myapi.api.corral"} {
			if !strings.Contains(r.stdout, want+"\n") {
				t.Errorf("guest says %q, want %q", r.stdout, want)
			}
		}
		if strings.Contains(r.stdout, "ON-DISK") {
			t.Errorf("the key's marker is in guest files: %s", r.stdout)
		}
		// The control of the probe: the marker, put on purpose into the session's environment,
		// an argv and a file, is found by the same script.
		plant := `m="CORRAL-E2E-"; m="${m}APIKEY-"; (exec -a "${m}argv" sleep 120) & sp=$!; printf '%s\n' "${m}file" >/tmp/corral-marker-control; sleep 0.3` + "\n"
		c := corral(t, dir, []string{"CORRAL_E2E_MARKER=" + apiKeyMarker + "control"}, "run", "--env", "CORRAL_E2E_MARKER", "--", "bash", "-c", plant+apiLeakScript+"\nkill $sp")
		if !strings.Contains(c.stdout, "ENV=1\n") || strings.Contains(c.stdout, "ARGV=0\n") || !strings.Contains(c.stdout, "ON-DISK /tmp/corral-marker-control") {
			t.Errorf("control: the probe does not see a marker planted in the environment, an argv and a file: %q", c.stdout)
		}
	})
	t.Run("the key is in no host file or argv; the egress log shows the route call", func(t *testing.T) {
		if hits := grepTree(suite.home, key); len(hits) > 0 {
			t.Errorf("the key is in files under CORRAL_HOME: %v", hits)
		}
		if leaks := scan.stop(t); len(leaks) > 0 {
			t.Errorf("the key is on a host argv: %v", leaks)
		}
		r := corral(t, dir, nil, "egress", "--json")
		if !strings.Contains(r.stdout, "myapi.api.corral") {
			t.Errorf("egress --json does not show the route call: %s", r.stdout)
		}
		c := corral(t, dir, nil, "config")
		if !strings.Contains(c.stdout, "api_routes.myapi.upstream") || strings.Contains(c.stdout, key) {
			t.Errorf("config: the route is not shown with its origin, or the key is: %s", c.stdout)
		}
	})
	gitPushOnBox(t, push, dir, box, route)
	reportOnBox(t, dir)
	t.Run("control: without the route the same call is refused", func(t *testing.T) {
		writeProjectConfig(t, box, strings.Replace(route, `api_brokers = ["myapi"]`, "", 1))
		before := good.Load()
		r := corral(t, dir, nil, "run", "--", "bash", "-c", apiFetch, "fetch", "http://myapi.api.corral/items/7", "myapi.api.corral", "X-Api-Key: box-guess")
		if strings.Contains(r.stdout, " 200 ") || good.Load() != before {
			t.Errorf("exit %d, stdout %q: the route answered after it was removed", r.code, r.stdout)
		}
	})
}
