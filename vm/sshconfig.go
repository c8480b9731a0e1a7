package vm

// This file reads the ssh.config Lima v1.2.2 writes for every instance and turns it into an
// Endpoint. Rules:
//   - Only the Host block named by the caller counts; Hostname, Port, User and IdentityFile are
//     read from it, every other option (StrictHostKeyChecking, ControlMaster, Ciphers, …) is
//     ignored: the session client makes those choices itself.
//   - Of the IdentityFile lines, only Lima's own key ($LIMA_HOME/_config/user, where $LIMA_HOME
//     is the directory above the instance directory that holds ssh.config) is ever used, and only
//     if it exists. Keys from ~/.ssh that Lima may list after it are never loaded, nor is the
//     SSH agent: the box gets no credential of the user's own.
//   - Hostname must be a loopback IP literal (Lima writes 127.0.0.1): a box is never reached
//     over the network or through a name lookup.
//   - The host key is not taken from the file (Lima disables checking); the pin file defaults to
//     "corral_host_key" in the instance directory, so deleting the box forgets its key.

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/git-corral/git-corral/internal/atomicfile"
)

// Endpoint is where and as whom to reach a box's sshd.
type Endpoint struct {
	Host         string
	Port         int
	User         string
	IdentityFile string
	HostKeyFile  string // TOFU pin file: created on first connect, verified after
}

// HostKeyPinName is the file name of the host key pin EndpointFromSSHConfig places next to
// ssh.config.
const HostKeyPinName = "corral_host_key"

// EndpointFromSSHConfig parses Lima v1.2.2's <instance>/ssh.config and returns the endpoint of
// the Host block named host ("lima-NAME"; the instance name NAME is accepted too).
func EndpointFromSSHConfig(path, host string) (Endpoint, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Endpoint{}, fmt.Errorf("read lima ssh config: %w", err)
	}
	opts, err := parseSSHConfig(path, data, host)
	if err != nil {
		return Endpoint{}, err
	}
	instDir := filepath.Dir(filepath.Clean(path))
	limaKey := filepath.Join(filepath.Dir(instDir), "_config", "user")
	ep := Endpoint{HostKeyFile: filepath.Join(instDir, HostKeyPinName)}
	for _, o := range opts {
		// As in ssh, the first value of an option wins.
		switch o.key {
		case "hostname":
			ep.Host = cmp.Or(ep.Host, o.value)
		case "user":
			ep.User = cmp.Or(ep.User, o.value)
		case "port":
			if ep.Port != 0 {
				continue
			}
			n, err := strconv.Atoi(o.value)
			if err != nil || n < 1 || n > 65535 {
				return Endpoint{}, fmt.Errorf("%s:%d: Port %q is not a port number (1-65535)", path, o.line, o.value)
			}
			ep.Port = n
		case "identityfile":
			if ep.IdentityFile == "" && filepath.Clean(o.value) == limaKey && fileExists(o.value) {
				ep.IdentityFile = o.value
			}
		}
	}
	return ep, checkEndpoint(path, ep, limaKey)
}

func checkEndpoint(path string, ep Endpoint, limaKey string) error {
	var missing []string
	if ep.Host == "" {
		missing = append(missing, "Hostname")
	}
	if ep.Port == 0 {
		missing = append(missing, "Port")
	}
	if ep.User == "" {
		missing = append(missing, "User")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s: no %s in the Host block; is the box running? (git corral start)", path, strings.Join(missing, ", "))
	}
	if ip := net.ParseIP(ep.Host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%s: Hostname %q is not a loopback IP address: a box's sshd is only reached through Lima's port forward on this machine", path, ep.Host)
	}
	if ep.IdentityFile == "" {
		return fmt.Errorf("%s: no IdentityFile names Lima's own key %q, or that key is missing: only Lima's key is used, never ~/.ssh keys or the agent", path, limaKey)
	}
	return nil
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// sshOption is one "Key value" line of an ssh config, with the key lower-cased.
type sshOption struct {
	key, value string
	line       int
}

// parseSSHConfig returns the options of the Host block named host, in file order. host may also
// be the instance name: Lima names the block "lima-" + the name with "." and "_" turned into "-"
// (pkg/instance/hostname). Match blocks and Host patterns with wildcards are not followed: Lima
// writes neither.
func parseSSHConfig(path string, data []byte, host string) ([]sshOption, error) {
	limaName := "lima-" + strings.NewReplacer(".", "-", "_", "-").Replace(strings.TrimPrefix(host, "lima-"))
	want := map[string]bool{host: true, limaName: true}
	var opts []sshOption
	in, found := false, false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		key, rest := splitKey(line)
		words, err := splitWords(rest)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %s: %w", path, n, key, err)
		}
		switch strings.ToLower(key) {
		case "host", "match":
			in = false
			if strings.EqualFold(key, "host") {
				for _, w := range words {
					in = in || want[w]
				}
			}
			found = found || in
			continue
		}
		if in && len(words) > 0 {
			opts = append(opts, sshOption{key: strings.ToLower(key), value: words[0], line: n})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if !found {
		return nil, fmt.Errorf("%s: no \"Host %s\" block", path, host)
	}
	return opts, nil
}

// splitKey splits "Key value" and "Key=value".
func splitKey(line string) (key, rest string) {
	i := strings.IndexAny(line, " \t=")
	if i < 0 {
		return line, ""
	}
	key, rest = line[:i], strings.TrimLeft(line[i:], " \t")
	if strings.HasPrefix(rest, "=") {
		rest = strings.TrimLeft(rest[1:], " \t")
	}
	return key, rest
}

// splitWords splits an option's arguments the way ssh does: on blanks, with double quotes
// grouping (Lima quotes IdentityFile and ControlPath).
func splitWords(s string) ([]string, error) {
	var words []string
	for s = strings.TrimLeft(s, " \t"); s != ""; s = strings.TrimLeft(s, " \t") {
		if s[0] == '"' {
			end := strings.IndexByte(s[1:], '"')
			if end < 0 {
				return nil, fmt.Errorf("unterminated quote in %q", s)
			}
			words = append(words, s[1:1+end])
			s = s[2+end:]
			continue
		}
		end := strings.IndexAny(s, " \t")
		if end < 0 {
			end = len(s)
		}
		words = append(words, s[:end])
		s = s[end:]
	}
	return words, nil
}

// hostKeyError is ErrHostKeyChanged with what was pinned and what was offered.
type hostKeyError struct {
	addr, file      string
	pinned, offered ssh.PublicKey
}

func (e *hostKeyError) Error() string {
	return fmt.Sprintf("%v: the box at %s offered %s %s but %s pins %s %s; "+
		"if the box was deleted and created again, remove the pin (rm %s) and retry, "+
		"otherwise something other than the box is answering on its port",
		ErrHostKeyChanged, e.addr, e.offered.Type(), ssh.FingerprintSHA256(e.offered),
		e.file, e.pinned.Type(), ssh.FingerprintSHA256(e.pinned), e.file)
}

func (e *hostKeyError) Unwrap() error { return ErrHostKeyChanged }

// readHostKeyPin reads the pinned host key; nil without error when there is no pin yet.
func readHostKeyPin(file string) (ssh.PublicKey, error) {
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read box host key pin: %w", err)
	}
	key, _, _, rest, err := ssh.ParseAuthorizedKey(data)
	if err != nil || len(bytes.TrimSpace(rest)) > 0 {
		return nil, fmt.Errorf("box host key pin %s is not one public key line; remove it to pin the key again on the next connect", file)
	}
	return key, nil
}

// checkHostKey accepts any key when nothing is pinned (trust on first use) and else only the
// pinned key.
func checkHostKey(file, addr string, pinned, offered ssh.PublicKey) error {
	if pinned == nil || bytes.Equal(pinned.Marshal(), offered.Marshal()) {
		return nil
	}
	return &hostKeyError{addr: addr, file: file, pinned: pinned, offered: offered}
}

// writeHostKeyPin pins key in file, atomically.
func writeHostKeyPin(file string, key ssh.PublicKey) error {
	if key == nil {
		return fmt.Errorf("pin box host key in %s: no key was offered", file)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return fmt.Errorf("pin box host key: %w", err)
	}
	if err := atomicfile.Write(file, ssh.MarshalAuthorizedKey(key), 0o600); err != nil {
		return fmt.Errorf("pin box host key: %w", err)
	}
	return nil
}

// hostKeyAlgorithms asks the server for the pinned key's type, so a box with several host keys
// is always checked against the one that was pinned.
func hostKeyAlgorithms(keyType string) []string {
	if keyType == ssh.KeyAlgoRSA {
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256}
	}
	return []string{keyType}
}
