package provision

// This file renders a box's guest scripts. Rules:
//   - Order at every boot: 10-base, 15-git-credential (only with git_tokens), 20-lockdown,
//     25-packages, 30-privdrop, 40-gitshadow, 45-cover (hide, box_dirs), then the repository's approved scripts as 50-repo-NN-*.sh. Lima runs every provision entry of
//     mode system in order and at every boot, so each script rewrites the same state each time.
//   - Every script is mode system. Repository scripts are wrapped: the approved bytes of the
//     script and of every file it pulls in are written into a root-owned tree, each at its
//     repository path (/etc/corral/provision/NN-name.d/), and the script runs from there with
//     the tree's top as its working directory, as the box user through runuser (as root only
//     when the script carries the system marker, the mode is full and it was approved). So
//     whatever it sources or runs by a relative path, or beside "$0", is approved bytes, and a
//     file review did not approve is simply absent: nothing is read from the project mount for
//     its own code. The project stays at $CORRAL_PROJECT_DIR for work that belongs there. Lima's own user mode is
//     not used: it copies the script into the user's home as root and chowns it there, which a
//     symlink planted by an earlier session turns into ownership of any root file.
//   - Every value comes through ShellQuote or a stricter check; files the scripts install are
//     embedded as quoted here-documents whose delimiter is proved absent from the content.

import (
	"bytes"
	"embed"
	"encoding/base64"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"text/template"

	"github.com/git-corral/git-corral/boxenv"
	"github.com/git-corral/git-corral/internal/lazyre"
	"github.com/git-corral/git-corral/policy"
)

//go:embed guest/*
var guestFS embed.FS

// GuardCheckPath is where the guard check is installed in the guest.
const GuardCheckPath = "/usr/local/libexec/corral/guard-check"

// SessionCheckPath is where the session check (session-check.bash) is installed in the guest.
const SessionCheckPath = "/usr/local/libexec/corral/session-check"

// AgentBinGuest is where the agent store's launchers are in the guest (vm.AgentBinGuest,
// which a vm test holds equal); /etc/profile.d/corral-agents.sh puts it on login shells' PATH.
const AgentBinGuest = "/opt/corral/agents/bin"

// GuardDaemonPath is where the resident guard daemon (guardd.pl) is installed in the guest;
// GuardSocketPath is where it answers (vm.Client.GuardReport).
const (
	GuardDaemonPath = "/usr/local/libexec/corral/guardd"
	GuardSocketPath = "/run/corral/guard.sock"
)

// forbiddenGroups are the groups the box user must not be in, in broker and offline modes:
// root or a way to it (sudo, admin, wheel, root: sudo/polkit rules; disk: raw block devices;
// docker, lxd, incus-admin, incus, libvirt, libvirt-qemu: container or VM sockets; shadow:
// password hashes; staff: /usr/local on older Debian), and groups the box has no use for that
// widen what it can read or touch (adm, systemd-journal: every log; kvm: /dev/kvm).
const forbiddenGroups = "root sudo admin wheel disk docker lxd incus-admin incus libvirt libvirt-qemu shadow staff adm systemd-journal kvm"

// rootPaths are paths root runs or reads from: owned by root, writable by nobody else.
const rootPaths = "/ /usr /usr/local /usr/local/libexec /usr/local/libexec/corral " + GuardCheckPath + " " + SessionCheckPath + " " + GuardDaemonPath +
	" /etc /etc/corral /etc/corral/project-dir /etc/sudoers /etc/sudoers.d /etc/systemd/system /run/corral"

// containerSockets are container and VM manager sockets that hand out root to whoever may write
// them.
const containerSockets = "/run/docker.sock /var/run/docker.sock /run/containerd/containerd.sock /run/podman/podman.sock " +
	"/run/incus/unix.socket /var/lib/incus/unix.socket /var/lib/lxd/unix.socket /var/snap/lxd/common/lxd/unix.socket " +
	"/run/libvirt/libvirt-sock /var/run/libvirt/libvirt-sock /run/buildkit/buildkitd.sock /run/crio/crio.sock"

// RepoScript is one approved repository provision script, as CheckApproved returns it.
type RepoScript struct {
	// Path is the repository-relative path, for names and messages.
	Path string
	// Body is the approved bytes: what runs, whatever the mount holds at boot.
	Body []byte
	// Files are the approved bytes of every repository file the script pulls in, by
	// repository-relative path: with Body, the tree the script runs in.
	Files map[string][]byte
	// Root is true when the script runs as root: it carries the system marker, the network
	// mode is full and the approval covers it.
	Root bool
}

const installFileFunc = `install_file() {
	tmp=$(mktemp "$1.XXXXXX")
	cat >"$tmp"
	chown root:root "$tmp"
	chmod "$2" "$tmp"
	mv -f "$tmp" "$1"
}`

type guestData struct {
	Mode, User, UserRaw, ProjectDir              string
	RulesetSHA256, UnitSHA256, SudoersSHA256     string
	ShadowExpected, CoverExpected                string
	GuardCheck, SSHDConf, Ruleset, Unit, Sudoers string
	SessionCheck, GuardDaemon, GuardUnit         string
	ForbiddenGroups, RootPaths, Sockets          string
	GuestAgentNS, GuestAgentDropIn               string
	InstallFile, Packages                        string
	// BrokerPort is BrokerPortFile's text in broker mode, "" otherwise (05-box writes it).
	BrokerPort, BrokerPortFile, Gateway string

	CredentialHelperPath, CredentialHelper, GitConfig string

	AgentBin, AgentsProfile string
}

// Render returns every guest script of a box, in the order they run at every boot.
func Render(opts Options) (Bundle, error) {
	d, err := prepare(opts)
	if err != nil {
		return Bundle{}, err
	}
	var b Bundle
	add := func(name, tmpl string) error {
		body, err := execGuest(tmpl, d)
		if err != nil {
			return err
		}
		b.Scripts = append(b.Scripts, Script{Name: name, Mode: ModeSystem, Body: body})
		return nil
	}
	if err := add(BoxScriptName, BoxScriptName); err != nil {
		return Bundle{}, err
	}
	if err := add("10-base.sh", "10-base.sh"); err != nil {
		return Bundle{}, err
	}
	if opts.GitCredentialHelper {
		if err := add("15-git-credential.sh", "15-git-credential.sh"); err != nil {
			return Bundle{}, err
		}
	}
	if err := add("20-lockdown.sh", "20-lockdown.sh"); err != nil {
		return Bundle{}, err
	}
	if len(opts.Packages) > 0 {
		if err := add("25-packages.sh", "25-packages.sh"); err != nil {
			return Bundle{}, err
		}
	}
	if err := add("30-privdrop.sh", "30-privdrop.sh"); err != nil {
		return Bundle{}, err
	}
	if opts.GitShadowScript != "" {
		b.Scripts = append(b.Scripts, Script{Name: GitShadowScriptName, Mode: ModeSystem, Body: opts.GitShadowScript})
	}
	if opts.CoverScript != "" {
		b.Scripts = append(b.Scripts, Script{Name: CoverScriptName, Mode: ModeSystem, Body: opts.CoverScript})
	}
	for i, r := range opts.Repo {
		s, err := renderRepo(i+1, r, opts, d)
		if err != nil {
			return Bundle{}, err
		}
		b.Scripts = append(b.Scripts, s)
	}
	return b, nil
}

// prepare checks every option and quotes every value the templates use.
func prepare(opts Options) (*guestData, error) {
	rules, err := Ruleset(opts.Network)
	if err != nil {
		return nil, fmt.Errorf("render guest scripts: %w", err)
	}
	var port string
	if opts.Network == policy.NetworkBroker {
		if port, err = BrokerPortDefine(opts.BrokerPort); err != nil {
			return nil, fmt.Errorf("render guest scripts: %w", err)
		}
	}
	if err := checkUser(opts.User); err != nil {
		return nil, fmt.Errorf("render guest scripts: %w", err)
	}
	if opts.ProjectDir != "" {
		if err := checkPath("project directory", opts.ProjectDir); err != nil {
			return nil, fmt.Errorf("render guest scripts: %w", err)
		}
	}
	d := &guestData{Mode: string(opts.Network), UserRaw: opts.User, Ruleset: rules, InstallFile: installFileFunc,
		BrokerPort: port, BrokerPortFile: BrokerPortFile, Gateway: Gateway}
	d.ForbiddenGroups, d.RootPaths, d.Sockets = forbiddenGroups, "'"+rootPaths+"'", "'"+containerSockets+"'"
	d.User, _ = ShellQuote("guest user", opts.User)
	d.ProjectDir, _ = ShellQuote("project directory", opts.ProjectDir)
	d.ShadowExpected = "0"
	if opts.GitShadowScript != "" {
		d.ShadowExpected = "1"
	}
	d.CoverExpected = "0"
	if opts.CoverScript != "" {
		d.CoverExpected = "1"
	}
	if err := packagesData(opts, d); err != nil {
		return nil, err
	}
	if d.SSHDConf, err = SSHDConf(opts); err != nil { // sshdconf.go
		return nil, err
	}
	if err := filesData(d); err != nil {
		return nil, err
	}
	return d, nil
}

func packagesData(opts Options, d *guestData) error {
	var words []string
	for _, p := range opts.Packages {
		if err := checkPackage(p); err != nil {
			return fmt.Errorf("render guest scripts: %w", err)
		}
		words = append(words, p)
	}
	d.Packages = strings.Join(words, " ")
	return nil
}

// filesData renders the files the scripts install, and the hashes the guard check holds them to.
func filesData(d *guestData) error {
	var err error
	if d.Unit, err = readGuest("corral-lockdown.service"); err != nil {
		return err
	}
	if d.Sudoers, err = execGuest("sudoers", d); err != nil {
		return err
	}
	d.RulesetSHA256 = "'" + sha256Hex(d.Ruleset) + "'"
	d.UnitSHA256 = "'" + sha256Hex(d.Unit) + "'"
	d.SudoersSHA256 = "'" + sha256Hex(d.Sudoers) + "'"
	if d.SessionCheck, err = execGuest("session-check.bash", d); err != nil {
		return err
	}
	if d.GuardDaemon, err = execGuest("guardd.pl", d); err != nil {
		return err
	}
	if d.GuardUnit, err = readGuest("corral-guardd.service"); err != nil {
		return err
	}
	if d.GuestAgentNS, err = execGuest("guestagent-ns.sh", d); err != nil {
		return err
	}
	if d.GuestAgentDropIn, err = execGuest("lima-guestagent-corral.conf", d); err != nil {
		return err
	}
	d.AgentBin = AgentBinGuest
	if d.AgentsProfile, err = execGuest("agents-profile.sh", d); err != nil {
		return err
	}
	d.GuardCheck, err = execGuest("guard-check.sh", d)
	d.CredentialHelperPath, d.CredentialHelper = boxenv.CredentialHelperPath, boxenv.CredentialHelper
	d.GitConfig = gitConfig
	return err
}

// gitConfig is the guest's /etc/gitconfig when git_tokens is set: the empty helper value clears
// any helper named before it, then git corral's helper is the one git asks.
const gitConfig = `# Written by git corral at every boot (git_tokens): the credential helper offers each token
# only to its own host, over https; it stores nothing.
[credential]
	helper =
	helper = ` + boxenv.CredentialHelperPath + `
`

func readGuest(name string) (string, error) {
	b, err := guestFS.ReadFile("guest/" + name)
	if err != nil {
		return "", fmt.Errorf("read embedded guest file %q: %w", name, err)
	}
	return string(b), nil
}

func execGuest(name string, data any) (string, error) {
	text, err := readGuest(name)
	if err != nil {
		return "", err
	}
	t, err := template.New(name).Option("missingkey=error").Funcs(template.FuncMap{"heredoc": heredoc}).Parse(text)
	if err != nil {
		return "", fmt.Errorf("parse embedded guest file %q: %w", name, err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return "", fmt.Errorf("render embedded guest file %q: %w", name, err)
	}
	return buf.String(), nil
}

// heredoc returns the shell lines that install content at path with mode through install_file,
// as a quoted here-document (no expansion) whose delimiter does not occur as a line of content.
func heredoc(path, mode, content string) (string, error) {
	if err := checkPath("installed file", path); err != nil {
		return "", err
	}
	if !regexp.MustCompile(`^0[0-7]{3}$`).MatchString(mode) {
		return "", fmt.Errorf("%w: file mode %q", ErrUnsafeValue, mode)
	}
	if !strings.HasSuffix(content, "\n") {
		content += "\n"
	}
	delim := "CORRAL_EOF_" + sha256Hex(content)[:16]
	for _, line := range strings.Split(content, "\n") {
		if line == delim {
			return "", fmt.Errorf("%w: content of %s holds its here-document delimiter", ErrUnsafeValue, path)
		}
	}
	return fmt.Sprintf("install_file %s %s <<'%s'\n%s%s", path, mode, delim, content, delim), nil
}

var slugRE = lazyre.New(`[^a-z0-9]+`)

// renderRepo wraps one approved repository script.
func renderRepo(n int, r RepoScript, opts Options, d *guestData) (Script, error) {
	if r.Root && opts.Network != policy.NetworkFull {
		return Script{}, fmt.Errorf("render provision script %q: runs as root only in network mode full, not %q", r.Path, opts.Network)
	}
	if opts.ProjectDir == "" {
		return Script{}, fmt.Errorf("render provision script %q: the project directory is not set", r.Path)
	}
	comment, err := ShellQuote("provision script path", r.Path)
	if err != nil {
		return Script{}, fmt.Errorf("render provision script: %w", err)
	}
	slug := strings.Trim(slugRE.ReplaceAllString(strings.ToLower(path.Base(r.Path)), "-"), "-")
	if len(slug) > 40 {
		slug = slug[:40]
	}
	file := fmt.Sprintf("%02d-%s", n, slug)
	runAs := "'user'"
	if r.Root {
		runAs = "'root'"
	}
	files, err := treeFiles(r)
	if err != nil {
		return Script{}, err
	}
	data := map[string]any{
		"Name": RepoScriptPrefix + file, "PathComment": comment, "SHA256": sha256Hex(string(r.Body)),
		"RunAs": runAs, "User": d.User, "ProjectDir": d.ProjectDir, "File": file, "Script": files[0].Rel, "Files": files,
	}
	body, err := execGuest("repo.sh", data)
	if err != nil {
		return Script{}, err
	}
	return Script{Name: RepoScriptPrefix + file + ".sh", Mode: ModeSystem, Body: body}, nil
}

// treeFile is one file of the tree a repository script runs in.
type treeFile struct{ Rel, SHA256, Base64 string }

// treeFiles lists the script, then the files it pulls in sorted by path, each checked to be a
// clean relative path and quoted.
func treeFiles(r RepoScript) ([]treeFile, error) {
	names := make([]string, 0, len(r.Files))
	for p := range r.Files {
		if p != r.Path {
			names = append(names, p)
		}
	}
	sort.Strings(names)
	out := make([]treeFile, 0, len(names)+1)
	for i, p := range append([]string{r.Path}, names...) {
		b := r.Body
		if i > 0 {
			b = r.Files[p]
		}
		if p == "" || path.IsAbs(p) || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") {
			return nil, fmt.Errorf("render provision script %q: %w: file path %q is not a clean relative path", r.Path, ErrUnsafeValue, p)
		}
		q, err := ShellQuote("provision file path", p)
		if err != nil {
			return nil, fmt.Errorf("render provision script %q: %w", r.Path, err)
		}
		out = append(out, treeFile{Rel: q, SHA256: sha256Hex(string(b)), Base64: wrap76(base64.StdEncoding.EncodeToString(b))})
	}
	return out, nil
}

func wrap76(s string) string {
	var b strings.Builder
	for len(s) > 76 {
		b.WriteString(s[:76] + "\n")
		s = s[76:]
	}
	b.WriteString(s)
	return b.String()
}
