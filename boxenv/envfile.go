package boxenv

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/git-corral/git-corral/internal/visible"
)

// maxEnvFile bounds an env file: it holds credentials, not data.
const maxEnvFile = 256 << 10

// ReadEnvFile reads a KEY=value file for env_file. It must be a regular file (not a symlink),
// owned by the current user and not readable or writable by group or others, because it holds
// secrets. Blank lines and lines starting with # are skipped; an optional "export " prefix and
// one pair of matching quotes around the value are removed; nothing is expanded. Errors name
// file:line and never echo a value.
func ReadEnvFile(path string) (map[string]string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("env_file %s: is a symlink; name the file itself", path)
		}
		return nil, fmt.Errorf("env_file %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("env_file %s: %w", path, err)
	}
	if err := checkEnvFileMode(path, fi); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, maxEnvFile+1))
	if err != nil {
		return nil, fmt.Errorf("env_file %s: %w", path, err)
	}
	if len(data) > maxEnvFile {
		return nil, fmt.Errorf("env_file %s: larger than %d KiB", path, maxEnvFile>>10)
	}
	return parseEnvFile(path, data)
}

func checkEnvFileMode(path string, fi os.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("env_file %s: not a regular file (%s)", path, fi.Mode().Type())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("env_file %s: owned by uid %d, not by you (uid %d); it holds secrets", path, st.Uid, os.Getuid())
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("env_file %s: mode %04o lets others read or change it; run: chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	return nil
}

func parseEnvFile(path string, data []byte) (map[string]string, error) {
	vals := map[string]string{}
	var errs []error
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, maxEnvFile)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || !validName.MatchString(k) {
			errs = append(errs, fmt.Errorf("env_file %s:%d: want KEY=value, got a line starting %q", path, n, visible.String(prefix(k, 20))))
			continue
		}
		if _, dup := vals[k]; dup {
			errs = append(errs, fmt.Errorf("env_file %s:%d: %s is set twice", path, n, k))
			continue
		}
		vals[k] = unquote(strings.TrimSpace(v))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return vals, nil
}

func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		return v[1 : len(v)-1]
	}
	return v
}

func prefix(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
