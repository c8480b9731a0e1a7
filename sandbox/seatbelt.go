package sandbox

// Seatbelt rules (macOS, rendering only: git corral sandbox runs on Linux today). The same
// manifest becomes a sandbox-exec(1) profile that denies by default and allows:
//   - reading the system (/usr, /bin, /sbin, /System, /Library/Apple, /private/etc, the dyld
//     caches) and the manifest's fs.read; reading and writing fs.write and the run's own
//     scratch directory; the few device files programs need;
//   - executing only the command and exec.allow (process-exec), forking, and signals to
//     processes of the same sandbox;
//   - network only to the run's broker on the host's loopback (when network.allow is set);
//   - the Mach services every program needs to start (the system logger and the directory
//     service are not among them).
// Every path is quoted as an SBPL string ("\" and """ escaped); the manifest already refuses
// NUL and line breaks.

import (
	"fmt"
	"sort"
	"strings"
)

// SeatbeltHost is what the profile needs beyond the manifest.
type SeatbeltHost struct {
	// Program is the command's program, an absolute path.
	Program string
	// Scratch is the run's private temporary directory.
	Scratch string
	// BrokerPort is the run's broker on 127.0.0.1 (0: none).
	BrokerPort int
}

// seatbeltSystemRead are the system paths every program reads.
var seatbeltSystemRead = []string{
	"/usr", "/bin", "/sbin", "/System", "/Library/Apple", "/private/etc", "/private/var/db/dyld",
	"/System/Volumes/Preboot/Cryptexes",
}

// seatbeltDevices are the device files a program may read and write.
var seatbeltDevices = []string{"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/dtracehelper"}

// SeatbeltProfile renders m as a sandbox-exec profile.
func SeatbeltProfile(m *Manifest, h SeatbeltHost) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w(";; git corral sandbox: generated from %q (%q); do not edit", orNone(m.Source), orNone(m.Digest))
	w("(version 1)")
	w("(deny default)")
	w("(allow process-fork)")
	w("(allow signal (target same-sandbox))")
	w("(allow sysctl-read)")
	w("(allow mach-lookup (global-name \"com.apple.system.notification_center\"))")
	w("(allow file-read-metadata (literal \"/\"))")
	w("(allow file-read* %s)", sbplPaths("subpath", seatbeltSystemRead))
	w("(allow file-read* file-write-data %s)", sbplPaths("literal", seatbeltDevices))
	if len(m.Read) > 0 {
		w("(allow file-read* %s)", sbplPaths("subpath", m.Read))
	}
	write := append([]string{h.Scratch}, m.Write...)
	w("(allow file-read* file-write* %s)", sbplPaths("subpath", write))
	exec := append([]string{h.Program}, m.Exec...)
	w("(allow process-exec %s)", sbplPaths("subpath", exec))
	w("(allow file-read* %s)", sbplPaths("subpath", exec))
	if h.BrokerPort != 0 && len(m.Network) > 0 {
		w("(allow network-outbound (remote ip \"localhost:%d\"))", h.BrokerPort)
	}
	return b.String()
}

// sbplPaths renders paths as (KIND "PATH") filters, sorted and without duplicates.
func sbplPaths(kind string, paths []string) string {
	seen := map[string]bool{}
	var out []string
	for _, p := range paths {
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, fmt.Sprintf("(%s %s)", kind, sbplString(p)))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// sbplString quotes s as an SBPL string literal.
func sbplString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

func orNone(s string) string {
	if s == "" {
		return "no manifest"
	}
	return s
}
