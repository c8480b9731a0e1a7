package broker

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/git-corral/git-corral/login"
)

// Resolver looks names up on the host. *net.Resolver satisfies it; tests inject their own so
// that no real name is ever resolved.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// DialFunc opens a TCP connection to address, always an IP:port the broker has checked.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// Limits bound what one box can make the broker hold. Zero fields take the defaults below.
type Limits struct {
	// MaxHeaderBytes caps a request's line and headers (431 beyond). Default 16 KiB.
	MaxHeaderBytes int
	// HeaderTimeout is the time a client has to send a whole request header once it has sent
	// its first byte (slowloris; 408 beyond). Default 10s.
	HeaderTimeout time.Duration
	// IdleTimeout closes a keep-alive connection with no new request, and bounds each read of a
	// plain-HTTP body or response. Default 60s.
	IdleTimeout time.Duration
	// TunnelIdleTimeout closes a tunnel with no data either way. Default 10m.
	TunnelIdleTimeout time.Duration
	// ResolveTimeout, DialTimeout and ResponseTimeout bound the upstream side. Defaults 5s, 10s
	// and 30s.
	ResolveTimeout, DialTimeout, ResponseTimeout time.Duration
	// MaxTunnels caps concurrent tunnels of the box (429 beyond). Default 256.
	MaxTunnels int
	// MaxConns caps concurrent client connections, tunnels included. Default MaxTunnels+64.
	MaxConns int
	// Rate and Burst are the token bucket for requests per second. Defaults 50 and 100.
	Rate  float64
	Burst int
	// MaxPushBytes caps the body of one push on a git route, which the broker holds whole
	// before it decides (refused beyond). Default 2 GiB.
	MaxPushBytes int64
}

func (l Limits) withDefaults() Limits {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = 16 << 10
	}
	def(&l.HeaderTimeout, 10*time.Second)
	def(&l.IdleTimeout, 60*time.Second)
	def(&l.TunnelIdleTimeout, 10*time.Minute)
	def(&l.ResolveTimeout, 5*time.Second)
	def(&l.DialTimeout, 10*time.Second)
	def(&l.ResponseTimeout, 30*time.Second)
	if l.MaxTunnels <= 0 {
		l.MaxTunnels = 256
	}
	if l.MaxConns <= 0 {
		l.MaxConns = l.MaxTunnels + 64
	}
	if l.Rate <= 0 {
		l.Rate = 50
	}
	if l.Burst <= 0 {
		l.Burst = 100
	}
	if l.MaxPushBytes <= 0 {
		l.MaxPushBytes = 2 << 30
	}
	return l
}

// Config is everything one box's broker needs.
type Config struct {
	// Box names the box in every log line.
	Box string
	// Allow is the allow-list, from trusted configuration layers only (see allow.go).
	Allow []string
	// Secret is the proxy password the box presents as Proxy-Authorization Basic credentials
	// (any user name). Required; at least 16 bytes.
	Secret []byte
	// Log receives one entry per attempt; nil discards them (tests only).
	Log *Log
	// Resolver resolves allowed names; nil means the host's resolver.
	Resolver Resolver
	// Dial connects to checked addresses; nil means a net.Dialer.
	Dial DialFunc
	// Limits bound resource use; zero fields take defaults.
	Limits Limits
	// APIRoutes are the API broker routes (trusted-only; see api.go).
	APIRoutes []APIRoute
	// Login tunes the host-held logins of login routes (tests shorten the refresh skew).
	Login login.Options
	// Logf receives diagnostics (never secrets); nil discards them.
	Logf func(format string, args ...any)
	// TestHosts answers for the names it holds instead of Resolver, with loopback addresses
	// only (testhosts.go: an end-to-end test's stand-in registries); nil in production.
	TestHosts map[string][]netip.Addr
}

// Broker is one box's egress proxy. Create it with New and run it with Serve.
type Broker struct {
	box       string
	allow     *AllowList
	secretSum [sha256.Size]byte
	log       *Log
	resolver  Resolver
	dial      DialFunc
	lim       Limits
	api       map[string]*apiRoute
	testHosts map[string][]netip.Addr
	logf      func(format string, args ...any)
	bucket    *bucket

	conns   atomic.Int64
	tunnels atomic.Int64
	mu      sync.Mutex
	active  map[net.Conn]*tunnelConns
}

// NewSecret returns a fresh per-box proxy secret: 32 random bytes, hex-encoded so that it fits
// a proxy URL (http://box:SECRET@host:port) without escaping.
func NewSecret() string {
	var b [32]byte
	rand.Read(b[:]) // never fails (crypto/rand panics rather than return short)
	return hex.EncodeToString(b[:])
}

// ErrNoSecret is returned by New when the secret is missing or short.
var ErrNoSecret = errors.New("broker secret missing or shorter than 16 bytes")

// New checks cfg and returns a broker ready to Serve. Every bad allow-list entry is reported.
func New(cfg Config) (*Broker, error) {
	if len(cfg.Secret) < 16 {
		return nil, ErrNoSecret
	}
	allow, err := ParseAllowList(cfg.Allow)
	if err != nil {
		return nil, err
	}
	b := &Broker{
		box: cfg.Box, allow: allow, secretSum: sha256.Sum256(cfg.Secret), log: cfg.Log,
		resolver: cfg.Resolver, dial: cfg.Dial, lim: cfg.Limits.withDefaults(), logf: cfg.Logf,
		active: map[net.Conn]*tunnelConns{},
	}
	if b.api, err = parseRoutes(cfg.APIRoutes, cfg.Login); err != nil {
		return nil, err
	}
	for name, addrs := range cfg.TestHosts {
		for _, a := range addrs {
			if !a.IsLoopback() {
				return nil, fmt.Errorf("test host %s: address %s is not loopback", name, a)
			}
		}
	}
	b.testHosts = cfg.TestHosts
	if b.resolver == nil {
		b.resolver = hostResolver{}
	}
	if b.dial == nil {
		// No TCP keep-alive probes: idle tunnels are found by the sweeper, and skipping the
		// four setsockopt calls per connection is measurable in connection latency.
		b.dial = (&net.Dialer{Timeout: b.lim.DialTimeout, KeepAlive: -1}).DialContext
	}
	if b.logf == nil {
		b.logf = func(string, ...any) {}
	}
	b.bucket = newBucket(b.lim.Rate, b.lim.Burst)
	return b, nil
}

// hostResolver is the host's resolver, with IPv4 answers as plain IPv4 addresses (the standard
// library may hand them back IPv4-mapped, which the address rules would refuse).
type hostResolver struct{}

func (hostResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, network, host)
	for i, a := range addrs {
		addrs[i] = a.Unmap()
	}
	return addrs, err
}

// Listen opens a TCP listener on addr, which must be a loopback IP literal with a port
// ("127.0.0.1:0"): the broker never listens where other hosts can reach it.
func Listen(ctx context.Context, addr string) (net.Listener, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().IsLoopback() {
		return nil, fmt.Errorf("broker listen address %q: must be a loopback IP and port such as 127.0.0.1:0", addr)
	}
	lc := net.ListenConfig{KeepAlive: -1}
	ln, err := lc.Listen(ctx, "tcp", ap.String())
	if err != nil {
		return nil, fmt.Errorf("broker listen on %q: %w", addr, err)
	}
	return ln, nil
}

// Serve accepts connections on ln until ctx is cancelled or ln fails, then closes ln and every
// connection it accepted. It returns nil after a cancellation.
func (b *Broker) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	go b.sweepIdle(ctx)
	var err error
	for {
		var c net.Conn
		c, err = ln.Accept()
		if err != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.serveConn(ctx, c)
		}()
	}
	cancel()
	b.closeAll()
	wg.Wait()
	if ctx.Err() != nil && errors.Is(err, net.ErrClosed) {
		return nil
	}
	return fmt.Errorf("broker accept: %w", err)
}

// bucket is a token bucket: Rate tokens per second, up to Burst.
type bucket struct {
	mu     sync.Mutex
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
}

func newBucket(rate float64, burst int) *bucket {
	return &bucket{rate: rate, burst: float64(burst), tokens: float64(burst), last: time.Now()}
}

// take spends one token, reporting false when none is left.
func (t *bucket) take() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	t.tokens = min(t.burst, t.tokens+now.Sub(t.last).Seconds()*t.rate)
	t.last = now
	if t.tokens < 1 {
		return false
	}
	t.tokens--
	return true
}

// record writes one egress log entry, filling box, time and duration.
func (b *Broker) record(e Entry, start time.Time) {
	e.Box = b.box
	e.Time = start.UTC()
	e.DurationMs = float64(time.Since(start).Microseconds()) / 1000
	if len(e.Host) > 256 {
		e.Host = e.Host[:256]
	}
	if b.log == nil {
		return
	}
	if err := b.log.Write(e); err != nil {
		b.logf("egress log: %v", err)
	}
}
