package clone

import (
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// TestMeasureClone50MB times, on this host and without a VM, the clone-mode path against plain
// git on the same 50 MB repository served by git http-backend over TLS on loopback. It runs only
// with CORRAL_BENCH=1 (it takes about a minute); docs/BENCHMARKS.md quotes its output.
func TestMeasureClone50MB(t *testing.T) {
	if os.Getenv("CORRAL_BENCH") != "1" {
		t.Skip("set CORRAL_BENCH=1 to run the clone measurement")
	}
	root := hermetic(t)
	work := filepath.Join(root, "work")
	must(t, os.MkdirAll(work, 0o755))
	git(t, work, "init", "-q")
	buf := make([]byte, 128<<10)
	for c := range 4 {
		for i := range 100 {
			rand.Read(buf)
			must(t, os.WriteFile(filepath.Join(work, fmt.Sprintf("f%03d-%d.bin", i, c)), buf, 0o644))
		}
		git(t, work, "add", "-A")
		git(t, work, "commit", "-q", "-m", fmt.Sprint(c))
	}
	srv := bareCopy(t, root, work, "big")
	git(t, srv, "repack", "-adq")
	server := serveHTTPSServer(t, filepath.Join(root, "srv"), nil)
	base, hc := server.URL, server.Client()
	cert := filepath.Join(root, "ca.pem")
	g := newGuest(t)
	caGuest := g.Path("ca.pem")
	writeCA(t, server, cert, caGuest)
	out, _ := exec.Command("du", "-sh", filepath.Join(srv, "objects")).Output()
	t.Logf("repository: %s", out)

	const runs = 5
	var fetchT, gitBareT, deliverT, guestCloneT []time.Duration
	for i := range runs {
		store := filepath.Join(root, "home", ".corral", "clones", fmt.Sprintf("b%d.git", i))
		start := time.Now()
		if _, err := Fetch(bg(), base+"/big.git", store, Options{HTTPClient: hc}); err != nil {
			t.Fatal(err)
		}
		fetchT = append(fetchT, time.Since(start))

		start = time.Now()
		cmd := exec.Command(realGit, "clone", "-q", "--bare", base+"/big.git", filepath.Join(root, fmt.Sprintf("plain%d.git", i)))
		cmd.Env = append(os.Environ(), "GIT_SSL_CAINFO="+cert)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git clone --bare: %v\n%s", err, out)
		}
		gitBareT = append(gitBareT, time.Since(start))

		start = time.Now()
		if err := Deliver(bg(), g, store, DeliverOptions{Dir: g.Path(fmt.Sprintf("d%d", i))}); err != nil {
			t.Fatal(err, g.Stderr())
		}
		deliverT = append(deliverT, time.Since(start))

		start = time.Now()
		inGuest(t, g, g.Dir, fmt.Sprintf("GIT_SSL_CAINFO=%s git clone -q %s/big.git c%d", caGuest, base, i))
		guestCloneT = append(guestCloneT, time.Since(start))
		os.RemoveAll(store)
		os.RemoveAll(filepath.Join(root, fmt.Sprintf("plain%d.git", i)))
		os.RemoveAll(g.Path(fmt.Sprintf("d%d", i)))
		os.RemoveAll(g.Path(fmt.Sprintf("c%d", i)))
	}
	t.Logf("median of %d: clone.Fetch (go-git + validation, host) %v; git clone --bare (host) %v", runs, median(fetchT), median(gitBareT))
	t.Logf("median of %d: clone.Deliver into sandbox guest %v; Fetch+Deliver %v; git clone inside the sandbox guest %v",
		runs, median(deliverT), median(fetchT)+median(deliverT), median(guestCloneT))
	t.Logf("all: fetch %v bare %v deliver %v guest-clone %v", fetchT, gitBareT, deliverT, guestCloneT)
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2].Round(10 * time.Millisecond)
}
