package diff

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/gitshadow"
)

// configCase is one family of host git config keys that names a work-tree file: the value is
// set in the host's global config (GIT_CONFIG_GLOBAL in the test's home), the box changes file,
// and the host's next git command would run or read it.
type configCase struct {
	name string
	// config holds key/value pairs set with git config --global; $WORK is the work tree.
	config [][2]string
	// file is the work-tree file the config names (created before the base, changed after).
	file string
	// key is the key the finding must name, as git lists it; origin a part of where it was set.
	key, origin string
	// files are more files to create before the base (included config files).
	files map[string]string
	// path, when set, is prepended to PATH for the test.
	path string
}

// configCases covers every key family gitshadow reads (THREATS.md §2, issue #19 item 2).
func configCases() []configCase {
	one := func(name, key, value, file string) configCase {
		return configCase{name: name, config: [][2]string{{key, value}}, file: file, key: strings.ToLower(key), origin: "~/gitconfig:"}
	}
	sub := func(name, key, value, file, listed string) configCase {
		c := one(name, key, value, file)
		c.key = listed
		return c
	}
	cases := []configCase{
		one("fsmonitor script", "core.fsmonitor", "ci/fsmon.sh", "ci/fsmon.sh"),
		one("hooksPath with a non-standard name", "core.hooksPath", "ci/git-hooks", "ci/git-hooks/pre-push"),
		one("pager with options", "core.pager", "tools/pager.sh -R", "tools/pager.sh"),
		one("editor through an interpreter", "core.editor", "sh tools/edit.sh", "tools/edit.sh"),
		one("editor script without a slash", "core.editor", "bash edit-here.sh", "edit-here.sh"),
		one("sshCommand", "core.sshCommand", "tools/ssh-wrap -i id", "tools/ssh-wrap"),
		one("askPass", "core.askPass", "tools/askpass", "tools/askpass"),
		one("sequence editor", "sequence.editor", "./tools/seqedit", "tools/seqedit"),
		one("external diff", "diff.external", "tools/extdiff", "tools/extdiff"),
		one("diff driver command", "diff.x.command", "tools/dcmd", "tools/dcmd"),
		one("textconv", "diff.x.textconv", "tools/textconv --x", "tools/textconv"),
		one("filter clean", "filter.x.clean", "tools/clean %f", "tools/clean"),
		one("filter smudge", "filter.x.smudge", "tools/smudge %f", "tools/smudge"),
		one("filter process", "filter.x.process", "tools/proc", "tools/proc"),
		one("merge driver", "merge.x.driver", "tools/merge %O %A %B", "tools/merge"),
		one("credential helper", "credential.helper", "!tools/cred.sh", "tools/cred.sh"),
		sub("credential helper for a URL", "credential.https://example.com.helper", "!./tools/cred2", "tools/cred2", "credential.https://example.com.helper"),
		one("alias", "alias.x", "!./tools/alias.sh", "tools/alias.sh"),
		one("alias through sh -c", "alias.y", "!sh -c 'tools/y.sh --now' && echo", "tools/y.sh"),
		one("gpg program", "gpg.program", "tools/gpg", "tools/gpg"),
		one("gpg ssh program", "gpg.ssh.program", "tools/sshsign", "tools/sshsign"),
		one("pager for one command", "pager.log", "tools/logpager", "tools/logpager"),
		one("template dir", "init.templateDir", "tools/tmpl", "tools/tmpl/hooks/post-checkout"),
		one("attributes file", "core.attributesFile", "tools/attrs", "tools/attrs"),
		one("commit template", "commit.template", "tools/msg", "tools/msg"),
		one("upload-pack of a local remote", "remote.origin.uploadpack", "tools/upload", "tools/upload"),
		one("submodule update command", "submodule.x.update", "!tools/upd", "tools/upd"),
		one("git-lfs custom transfer agent", "lfs.customtransfer.x.path", "tools/lfs-agent", "tools/lfs-agent"),
		one("include.path", "include.path", "$WORK/team.cfg", "team.cfg"),
		sub("includeIf whose condition does not hold now", "includeIf.onbranch:nope.path", "$WORK/cond.cfg", "cond.cfg", "includeif.onbranch:nope.path"),
		{name: "chained includes", config: [][2]string{{"include.path", "$WORK/conf/a.cfg"}}, file: "tools/chain.sh",
			key: "core.fsmonitor", origin: "conf/b.cfg:2",
			files: map[string]string{"conf/a.cfg": "[include]\n\tpath = b.cfg\n", "conf/b.cfg": "[core]\n\tfsmonitor = tools/chain.sh\n"}},
		{name: "bare name on a PATH holding a work-tree dir", config: [][2]string{{"core.pager", "lesser -R"}},
			file: "node_modules/.bin/lesser", key: "core.pager", origin: "~/gitconfig:", path: "node_modules/.bin"},
	}
	return cases
}

// TestConfigNamedFilesAreHostExecuted proves, for every key family, that the shadow plan names
// the file with its key, and that diff reports a change to it as a finding naming the key and
// where it was set. The control changes the same file with no config naming it: no finding.
func TestConfigNamedFilesAreHostExecuted(t *testing.T) {
	for _, c := range configCases() {
		t.Run(c.name, func(t *testing.T) {
			for _, named := range []bool{true, false} {
				f := configFinding(t, c, named)
				switch {
				case named && f == nil:
					t.Errorf("a change to %s named by %s is not a finding", c.file, c.key)
				case named && (!strings.Contains(f.Reason, "named by "+c.key+" in ") || !strings.Contains(f.Reason, c.origin)):
					t.Errorf("finding for %s: reason %q, want the key %q and origin %q", c.file, f.Reason, c.key, c.origin)
				case !named && f != nil:
					t.Errorf("control: %s changed with no config naming it is a finding: %+v", c.file, f)
				}
			}
		})
	}
}

// configFinding builds the case's repository (with its config when named), records a base,
// changes the file and returns the finding about it, or nil. When named it also checks that
// the shadow plan names the file with the key.
func configFinding(t *testing.T, c configCase, named bool) *Finding {
	t.Helper()
	files := map[string]string{c.file: "v1\n", "unrelated.txt": "x\n"}
	for k, v := range c.files {
		files[k] = v
	}
	r := newRepo(t, files)
	if c.path != "" {
		t.Setenv("PATH", c.path+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	if named {
		for _, kv := range c.config {
			r.git("config", "--global", kv[0], strings.ReplaceAll(kv[1], "$WORK", r.dir))
		}
	}
	r.record()
	r.write(c.file, "v1\nevil\n")
	plan, err := gitshadow.Discover(t.Context(), r.project())
	if err != nil {
		t.Fatal(err)
	}
	if named && !slices.ContainsFunc(plan.ConfigRefs, func(ref gitshadow.ConfigRef) bool {
		return ref.Path == filepath.Join(r.dir, c.file) || inDir(filepath.Join(r.dir, c.file), ref.Path)
	}) {
		t.Errorf("the shadow plan does not name %s: %+v", c.file, plan.ConfigRefs)
	}
	var o Options
	for _, d := range plan.DiffPaths() {
		o.ConfigPaths = append(o.ConfigPaths, ConfigPath(d))
	}
	rep := r.compare(o)
	for i, f := range rep.Findings {
		if f.Path == c.file {
			return &rep.Findings[i]
		}
	}
	for _, ch := range rep.Changes {
		if ch.Path == c.file && ch.Finding {
			t.Errorf("%s is marked a finding but none is about it", c.file)
		}
	}
	return nil
}

// inDir reports whether p is below dir.
func inDir(p, dir string) bool { return strings.HasPrefix(p, dir+string(filepath.Separator)) }
