package boxenv

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func lookupFrom(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

var host = map[string]string{
	"ANTHROPIC_API_KEY": "sk-ant-secret",
	"GH_PAT":            "ghp-secret",
	"HOME":              "/home/me",
	"AWS_SECRET":        "aws-secret",
	"DEPLOY_KEY":        "deploy",
}

func TestAssembleOnlyNamedVariables(t *testing.T) {
	e, err := Assemble(Sources{
		ForwardEnv:  []string{"ANTHROPIC_API_KEY", "NOT_SET_ANYWHERE"},
		EnvFromHost: map[string]string{"TOKEN": "DEPLOY_KEY"},
		Env:         map[string]string{"MODE": "ci"},
	}, lookupFrom(host))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-secret", "TOKEN": "deploy", "MODE": "ci"}
	if !reflect.DeepEqual(e.Values, want) {
		t.Errorf("values %v, want %v (nothing ambient: AWS_SECRET and HOME must not pass)", e.Values, want)
	}
	if got := strings.Join(e.Names(), ","); got != "ANTHROPIC_API_KEY,MODE,TOKEN" {
		t.Errorf("names %q", got)
	}
}

func TestEnvFromHostFailsClosed(t *testing.T) {
	_, err := Assemble(Sources{EnvFromHost: map[string]string{"GITHUB_TOKEN": "GH_TOKEN_FOR_BOX"}},
		lookupFrom(map[string]string{"GITHUB_TOKEN": "broad-token"}))
	if !errors.Is(err, ErrUnsetHostVariable) || !strings.Contains(err.Error(), "GH_TOKEN_FOR_BOX") {
		t.Fatalf("error %v: want ErrUnsetHostVariable naming GH_TOKEN_FOR_BOX", err)
	}
	if strings.Contains(err.Error(), "broad-token") {
		t.Error("the error shows a value")
	}
}

func TestNoPassthroughForwardsNothing(t *testing.T) {
	e, err := Assemble(Sources{
		ForwardEnv:    []string{"ANTHROPIC_API_KEY"},
		EnvFromHost:   map[string]string{"TOKEN": "DEPLOY_KEY"},
		GitTokens:     map[string]string{"github.com": "GH_PAT"},
		Env:           map[string]string{"MODE": "ci"},
		NoPassthrough: true,
	}, lookupFrom(host))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(e.Values, map[string]string{"MODE": "ci"}) {
		t.Errorf("values %v: no_env_passthrough must take nothing from the host", e.Values)
	}
	if len(e.Dropped) != 3 {
		t.Errorf("dropped %v: want each dropped variable named", e.Dropped)
	}
}

func TestReservedAndMalformedNames(t *testing.T) {
	for _, name := range []string{"PATH", "LD_PRELOAD", "BASH_ENV", "GIT_CONFIG_COUNT", "1X", "A-B", "A B", "X\nY", "CORRAL_GIT_TOKEN_0", "BASH_FUNC_x%%"} {
		_, err := Assemble(Sources{Env: map[string]string{name: "v"}}, lookupFrom(nil))
		if err == nil {
			t.Errorf("env %q was accepted", name)
		}
	}
	if _, err := Assemble(Sources{Env: map[string]string{"A": "x\x00y"}}, lookupFrom(nil)); err == nil {
		t.Error("a NUL in a value was accepted")
	}
}

func TestGitTokens(t *testing.T) {
	e, err := Assemble(Sources{GitTokens: map[string]string{"github.com": "GH_PAT"}}, lookupFrom(host))
	if err != nil {
		t.Fatal(err)
	}
	if e.Values["CORRAL_GIT_TOKEN_0"] != "ghp-secret" || e.Values["CORRAL_GIT_TOKEN_0_HOST"] != "github.com" {
		t.Errorf("token variables %v", e.Values)
	}
	for _, bad := range []string{"GitHub.com", "github.com/evil", "-x", "a b", "host\n"} {
		if _, err := Assemble(Sources{GitTokens: map[string]string{bad: "GH_PAT"}}, lookupFrom(host)); err == nil {
			t.Errorf("git_tokens host %q accepted", bad)
		}
	}
	if _, err := Assemble(Sources{GitTokens: map[string]string{"github.com": "UNSET"}}, lookupFrom(host)); !errors.Is(err, ErrUnsetHostVariable) {
		t.Errorf("unset token variable: %v", err)
	}
}

func TestEnvFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "box.env")
	os.WriteFile(good, []byte("# comment\nexport A=1\nB=\"two words\"\n\nC='x=y'\n"), 0o600)
	vals, err := ReadEnvFile(good)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(vals, map[string]string{"A": "1", "B": "two words", "C": "x=y"}) {
		t.Errorf("parsed %v", vals)
	}

	readable := filepath.Join(dir, "open.env")
	os.WriteFile(readable, []byte("A=secret\n"), 0o644)
	if _, err := ReadEnvFile(readable); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("world-readable env file: %v", err)
	}
	link := filepath.Join(dir, "link.env")
	os.Symlink(good, link)
	if _, err := ReadEnvFile(link); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("symlinked env file: %v", err)
	}
	if _, err := ReadEnvFile(dir); err == nil {
		t.Error("a directory was read as an env file")
	}
	bad := filepath.Join(dir, "bad.env")
	os.WriteFile(bad, []byte("A=1\nnot a pair\nA=2\n"), 0o600)
	_, err = ReadEnvFile(bad)
	if err == nil || !strings.Contains(err.Error(), "bad.env:2") || !strings.Contains(err.Error(), "bad.env:3") {
		t.Errorf("want every bad line named: %v", err)
	}
	if os.Geteuid() == 0 {
		other := filepath.Join(dir, "other.env")
		os.WriteFile(other, []byte("A=1\n"), 0o600)
		os.Chown(other, 65534, 65534)
		if _, err := ReadEnvFile(other); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
			t.Errorf("env file owned by another user: %v", err)
		}
	}
}
