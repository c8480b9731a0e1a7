package broker

import (
	"fmt"
	"os"

	"github.com/git-corral/git-corral/internal/atomicfile"
)

// EnsureSecretFile returns the box's proxy secret kept in path (a 0600 file whose directory the
// caller created), creating it once with a new secret. A file too short to be one of ours is
// replaced.
func EnsureSecretFile(path string) (string, []byte, error) {
	if b, err := os.ReadFile(path); err == nil && len(b) >= 32 {
		return path, b, nil
	}
	secret := []byte(NewSecret())
	if err := atomicfile.Write(path, secret, 0o600); err != nil {
		return "", nil, err
	}
	return path, secret, nil
}

// ProxyEnv is what a broker-mode session is given so that its tools use the broker at
// gateway:port with secret. Values travel only inside the SSH channel, never on a command line.
func ProxyEnv(secret []byte, gateway string, port int) map[string]string {
	url := fmt.Sprintf("http://corral:%s@%s:%d", secret, gateway, port)
	return map[string]string{
		"http_proxy": url, "https_proxy": url, "HTTP_PROXY": url, "HTTPS_PROXY": url,
		"no_proxy": "localhost,127.0.0.1,::1", "NO_PROXY": "localhost,127.0.0.1,::1",
	}
}
