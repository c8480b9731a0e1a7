// Command brokerbench measures git corral's egress broker side by side with direct TCP, squid
// and tinyproxy, all on loopback: tunnel throughput, added connection latency, and the resident
// memory of the proxy holding many idle tunnels. It starts every proxy itself with a temporary
// configuration and stops each by its PID. Run it through bench/broker.sh.
package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const secret = "bench-secret-0123456789"

var (
	bin      = flag.String("bin", "bin/git-corral", "git-corral binary")
	runs     = flag.Int("runs", 5, "rounds for throughput (median reported)")
	size     = flag.Int64("bytes", 1<<30, "bytes pushed through each tunnel per throughput run")
	samples  = flag.Int("samples", 1000, "connections per latency measurement")
	idle     = flag.Int("idle", 2000, "idle tunnels held for the memory measurement")
	only     = flag.String("only", "", "comma-separated subset of relay,corral,squid,tinyproxy (direct is always measured)")
	measure  = flag.String("measure", "throughput,latency,memory", "comma-separated subset of throughput,latency,memory")
	keepTemp = flag.Bool("keep", false, "keep the temporary directory")
	relaySrv = flag.Bool("relay-serve", false, "run as the plain relay (internal: brokerbench starts itself so)")
)

// target is one way to reach the sink: directly, or through a proxy.
type target struct {
	name  string
	proxy string // host:port; empty for direct
	auth  bool
	cmd   *exec.Cmd
	stdin io.Closer // the plain relay ends when it is closed
}

func main() {
	flag.Parse()
	if *relaySrv {
		// serveRelay returns only when its listener fails: the relay ends by exiting when the
		// parent closes its standard input.
		fmt.Fprintln(os.Stderr, "brokerbench relay:", serveRelay())
		os.Exit(1)
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "brokerbench:", err)
		os.Exit(1)
	}
}

func run() error {
	tmp, err := os.MkdirTemp("", "brokerbench-")
	if err != nil {
		return err
	}
	if !*keepTemp {
		defer os.RemoveAll(tmp)
	}
	os.Chmod(tmp, 0o755)
	sink, err := startSink()
	if err != nil {
		return err
	}
	defer sink.Close()
	sinkAddr := sink.Addr().String()
	targets := []*target{{name: "direct"}}
	starters := map[string]func(string, string) (*target, error){"relay": startRelay, "corral": startCorral, "squid": startSquid, "tinyproxy": startTinyproxy}
	for _, name := range []string{"relay", "corral", "squid", "tinyproxy"} {
		if !chosen(*only, name) {
			continue
		}
		t, err := starters[name](tmp, sinkAddr)
		if err != nil {
			fmt.Fprintf(os.Stderr, "brokerbench: %s not measured: %v\n", name, err)
			continue
		}
		defer stop(t)
		targets = append(targets, t)
	}
	fmt.Printf("loopback, %d runs of %d MiB per throughput figure, %d connections per latency figure, %d idle tunnels\n\n",
		*runs, *size>>20, *samples, *idle)
	if chosen(*measure, "throughput") {
		if err := throughput(targets, sinkAddr); err != nil {
			return err
		}
	}
	if chosen(*measure, "latency") {
		if err := latency(targets, sinkAddr); err != nil {
			return err
		}
	}
	if chosen(*measure, "memory") {
		return memory(targets, sinkAddr)
	}
	return nil
}

// chosen reports whether name is in the comma-separated list (an empty list holds everything).
func chosen(list, name string) bool {
	return list == "" || strings.Contains(","+list+",", ","+name+",")
}

// startSink accepts connections, discards what they send, and closes after EOF.
func startSink() (net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				buf := make([]byte, 1<<20)
				for {
					if _, err := c.Read(buf); err != nil {
						break
					}
				}
				c.Close()
			}()
		}
	}()
	return ln, nil
}

// waitPort waits until addr accepts connections.
func waitPort(addr string) error {
	for range 100 {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("nothing listening on %s", addr)
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// firstLine starts cmd and returns the first line it prints (the address it listens on).
func firstLine(cmd *exec.Cmd, what string) (string, error) {
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return "", fmt.Errorf("no address from %s: %w", what, err)
	}
	return strings.TrimSpace(line), nil
}

func startCorral(tmp, sinkAddr string) (*target, error) {
	secretFile := filepath.Join(tmp, "secret")
	if err := os.WriteFile(secretFile, []byte(secret), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(*bin, "--box", "bench", "broker", "serve", "--secret-file", secretFile,
		"--allow", sinkAddr, "--log", filepath.Join(tmp, "egress.jsonl"),
		"--max-tunnels", strconv.Itoa(*idle+100), "--rate", "100000")
	cmd.Env = append(os.Environ(), "CORRAL_HOME="+filepath.Join(tmp, "corral"))
	cmd.Stderr = os.Stderr
	line, err := firstLine(cmd, "broker")
	if err != nil {
		return nil, err
	}
	return &target{name: "corral", proxy: line, auth: true, cmd: cmd}, nil
}

func startSquid(tmp, sinkAddr string) (*target, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(tmp, "squid")
	os.MkdirAll(dir, 0o777)
	os.Chmod(dir, 0o777)
	conf := filepath.Join(dir, "squid.conf")
	text := fmt.Sprintf(`http_port 127.0.0.1:%d
http_access allow all
cache deny all
cache_mem 8 MB
access_log none
cache_store_log none
cache_log %s/cache.log
pid_filename %s/squid.pid
coredump_dir %s
max_filedescriptors 16384
shutdown_lifetime 1 seconds
read_timeout 15 minutes
client_persistent_connections on
`, port, dir, dir, dir)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command("squid", "-N", "-f", conf)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if err := waitPort(addr); err != nil {
		stop(&target{cmd: cmd})
		return nil, err
	}
	return &target{name: "squid", proxy: addr, cmd: cmd}, nil
}

func startTinyproxy(tmp, sinkAddr string) (*target, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(tmp, "tinyproxy")
	os.MkdirAll(dir, 0o777)
	os.Chmod(dir, 0o777)
	conf := filepath.Join(dir, "tinyproxy.conf")
	text := fmt.Sprintf(`User nobody
Group nogroup
Port %d
Listen 127.0.0.1
Timeout 900
MaxClients %d
LogLevel Critical
PidFile "%s/tinyproxy.pid"
Allow 127.0.0.1
DisableViaHeader Yes
`, port, *idle+200, dir)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command("tinyproxy", "-d", "-c", conf)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if err := waitPort(addr); err != nil {
		stop(&target{cmd: cmd})
		return nil, err
	}
	return &target{name: "tinyproxy", proxy: addr, cmd: cmd}, nil
}

// stop ends a proxy this program started, by its PID.
func stop(t *target) {
	if t.cmd == nil || t.cmd.Process == nil {
		return
	}
	if t.stdin != nil {
		t.stdin.Close()
	}
	t.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { t.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.cmd.Process.Kill()
		<-done
	}
}

// open connects to the sink through t, returning once the tunnel is established.
func (t *target) open(ctx context.Context, sinkAddr string) (net.Conn, error) {
	var d net.Dialer
	if t.proxy == "" {
		return d.DialContext(ctx, "tcp", sinkAddr)
	}
	c, err := d.DialContext(ctx, "tcp", t.proxy)
	if err != nil {
		return nil, err
	}
	req := "CONNECT " + sinkAddr + " HTTP/1.1\r\nHost: " + sinkAddr + "\r\n"
	if t.auth {
		req += "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("bench:"+secret)) + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		c.Close()
		return nil, err
	}
	// Read the answer byte by byte so that nothing after it is swallowed by a buffer.
	resp, err := http.ReadResponse(bufio.NewReaderSize(oneByte{c}, 16), &http.Request{Method: "CONNECT"})
	if err != nil {
		c.Close()
		return nil, err
	}
	if resp.StatusCode != 200 {
		c.Close()
		return nil, fmt.Errorf("%s: CONNECT answered %s", t.name, resp.Status)
	}
	return c, nil
}

type oneByte struct{ r io.Reader }

func (o oneByte) Read(p []byte) (int, error) { return o.r.Read(p[:1]) }

// push sends n bytes through one tunnel and waits until the sink has read them all.
func push(t *target, sinkAddr string, n int64, buf []byte) (time.Duration, error) {
	c, err := t.open(context.Background(), sinkAddr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	start := time.Now()
	for left := n; left > 0; {
		chunk := buf[:min(int64(len(buf)), left)]
		if _, err := c.Write(chunk); err != nil {
			return 0, err
		}
		left -= int64(len(chunk))
	}
	c.(*net.TCPConn).CloseWrite()
	io.Copy(io.Discard, c) // the sink closes after EOF; the proxy passes that on
	return time.Since(start), nil
}

func throughput(targets []*target, sinkAddr string) error {
	buf := make([]byte, 1<<20)
	res := map[string][]float64{}
	ratio := map[string][]float64{}
	for r := range *runs {
		var direct float64
		for _, t := range targets {
			d, err := push(t, sinkAddr, *size, buf)
			if err != nil {
				return fmt.Errorf("throughput %s run %d: %w", t.name, r, err)
			}
			mibs := float64(*size) / d.Seconds() / (1 << 20)
			if t.proxy == "" {
				direct = mibs
			}
			res[t.name] = append(res[t.name], mibs)
			// Each round measures direct TCP right before the proxies, so the ratio within a
			// round cancels most of the load other users put on the machine meanwhile.
			ratio[t.name] = append(ratio[t.name], mibs/direct)
		}
	}
	fmt.Println("| tunnel throughput | median MiB/s | runs (MiB/s) | median of per-round ratio to direct |")
	fmt.Println("|---|---:|---|---:|")
	for _, t := range targets {
		fmt.Printf("| %s | %.0f | %s | %.2f× |\n", t.name, median(res[t.name]), list(res[t.name], "%.0f"), median(ratio[t.name]))
	}
	fmt.Println()
	return nil
}

func latency(targets []*target, sinkAddr string) error {
	lat := map[string][]float64{}
	cpu0 := map[string]float64{}
	for _, t := range targets {
		cpu0[t.name] = cpuSeconds(t)
	}
	for i := range *samples {
		for _, t := range targets {
			start := time.Now()
			c, err := t.open(context.Background(), sinkAddr)
			if err != nil {
				return fmt.Errorf("latency %s sample %d: %w", t.name, i, err)
			}
			lat[t.name] = append(lat[t.name], float64(time.Since(start).Microseconds())/1000)
			c.Close()
		}
	}
	time.Sleep(200 * time.Millisecond) // let the last tunnels end (the broker logs them then)
	d50, d99 := pct(lat["direct"], 50), pct(lat["direct"], 99)
	fmt.Println("| connection setup | p50 ms | p99 ms | added p50 ms | added p99 ms | proxy CPU µs per connection |")
	fmt.Println("|---|---:|---:|---:|---:|---:|")
	for _, t := range targets {
		p50, p99 := pct(lat[t.name], 50), pct(lat[t.name], 99)
		cpu := "–"
		if t.cmd != nil {
			cpu = fmt.Sprintf("%.0f", (cpuSeconds(t)-cpu0[t.name])/float64(*samples)*1e6)
		}
		fmt.Printf("| %s | %.3f | %.3f | %.3f | %.3f | %s |\n", t.name, p50, p99, p50-d50, p99-d99, cpu)
	}
	fmt.Println()
	return nil
}

// cpuSeconds is the user and system CPU time of t's process and its children so far (the
// connections of the latency loop are the only work a proxy has meanwhile).
func cpuSeconds(t *target) float64 {
	if t.cmd == nil || t.cmd.Process == nil {
		return 0
	}
	total := 0.0
	for _, p := range family(t.cmd.Process.Pid) {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		// The fields after the command name, which is in parentheses and may hold spaces.
		f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
		if len(f) > 12 {
			utime, _ := strconv.ParseFloat(f[11], 64)
			stime, _ := strconv.ParseFloat(f[12], 64)
			total += (utime + stime) / 100 // USER_HZ is 100 on Linux
		}
	}
	return total
}

// family is pid and its children (squid and tinyproxy may fork).
func family(pid int) []int {
	pids := []int{pid}
	kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	for _, f := range strings.Fields(string(kids)) {
		if k, err := strconv.Atoi(f); err == nil {
			pids = append(pids, k)
		}
	}
	return pids
}

func memory(targets []*target, sinkAddr string) error {
	fmt.Printf("| %d idle tunnels | RSS before MiB | RSS holding them MiB | of which anonymous | of which file-backed |\n|---|---:|---:|---:|---:|\n", *idle)
	for _, t := range targets {
		if t.cmd == nil {
			continue
		}
		before, _ := rss(t.cmd.Process.Pid)
		var conns []net.Conn
		var err error
		for range *idle {
			var c net.Conn
			if c, err = t.open(context.Background(), sinkAddr); err != nil {
				break
			}
			conns = append(conns, c)
		}
		time.Sleep(time.Second)
		after, _ := rss(t.cmd.Process.Pid)
		for _, c := range conns {
			c.Close()
		}
		note := ""
		if err != nil {
			note = fmt.Sprintf(" (only %d opened: %v)", len(conns), err)
		}
		fmt.Printf("| %s | %.1f | %.1f%s | %.1f | %.1f |\n", t.name, before.total, after.total, note, after.anon, after.file)
		time.Sleep(time.Second)
	}
	return nil
}

// resident is a resident set in MiB: the total, and its anonymous (heap, stacks) and
// file-backed (the program's own pages, shared libraries) parts.
type resident struct{ total, anon, file float64 }

// rss is the resident set of pid and its children (squid and tinyproxy may fork).
func rss(pid int) (resident, error) {
	var r resident
	for _, p := range family(pid) {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p))
		if err != nil {
			return r, err
		}
		for _, line := range strings.Split(string(data), "\n") {
			key, v, _ := strings.Cut(line, ":")
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			switch key {
			case "VmRSS":
				r.total += kb / 1024
			case "RssAnon":
				r.anon += kb / 1024
			case "RssFile", "RssShmem":
				r.file += kb / 1024
			}
		}
	}
	if r.total == 0 {
		return r, errors.New("no VmRSS")
	}
	return r, nil
}

func median(xs []float64) float64 { return pct(xs, 50) }

func pct(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(float64(len(s)-1) * p / 100)
	return s[i]
}

func list(xs []float64, f string) string {
	var parts []string
	for _, x := range xs {
		parts = append(parts, fmt.Sprintf(f, x))
	}
	return strings.Join(parts, ", ")
}
