package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/clone"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/visible"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/project"
	"github.com/git-corral/git-corral/report"
	"github.com/git-corral/git-corral/vm"
)

func defineReport(fs *pflag.FlagSet) runFunc {
	sessionID := fs.String("session", "", "record the session with this ID (default: the box's last)")
	all := fs.Bool("all", false, "one record of every session of the box")
	sign := fs.String("sign", "", "sign the record with this SSH private key")
	verify := fs.String("verify", "", "check a report file's hashes and signature")
	allowed := fs.String("allowed-signers", "", "with --verify, the ssh-keygen allowed-signers file the signer must be in")
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) > 0 {
			return usageErrorf("report", "report takes no arguments")
		}
		if *verify != "" {
			if *sessionID != "" || *all || *sign != "" {
				return usageErrorf("report", "--verify takes no --session, --all or --sign")
			}
			return a.reportVerify(*verify, *allowed)
		}
		if *allowed != "" {
			return usageErrorf("report", "--allowed-signers is for --verify")
		}
		if *all && *sessionID != "" {
			return usageErrorf("report", "--all records every session; --session picks one")
		}
		o, err := a.reportOptions(ctx)
		if err != nil {
			return err
		}
		o.Session, o.All = *sessionID, *all
		return a.reportWrite(ctx, o, *sign)
	}
}

// reportWrite builds, encodes and (with key) signs the record, then writes it in one piece:
// nothing is written when any step fails.
func (a *app) reportWrite(ctx context.Context, o report.Options, key string) error {
	var signer *report.Signer
	if key != "" { // the key first: a refused key costs no diff check
		var err error
		if signer, err = report.LoadSigner(key, a.getenv("SSH_AUTH_SOCK")); err != nil {
			if errors.Is(err, report.ErrPassphrase) {
				return withHint(err, "start ssh-agent, 'ssh-add "+key+"', then run 'git corral report --sign "+key+"' again")
			}
			return err
		}
		defer signer.Close()
	}
	rec, err := report.Build(ctx, o)
	if errors.Is(err, report.ErrNoSession) {
		return withHint(err, "'git corral audit' lists the sessions; one is recorded when git corral start, run or shell begins")
	}
	if err != nil {
		return err
	}
	out, err := report.Encode(rec)
	if err != nil {
		return err
	}
	if signer != nil {
		if out, err = report.Signed(ctx, out, signer); err != nil {
			return err
		}
	}
	_, err = a.stdout.Write(out)
	return err
}

// reportOptions finds the box and what of it is on the host: a clone directory's store, or
// the checkout of a mount-mode box; with --box naming another box, its host records only.
func (a *app) reportOptions(ctx context.Context) (report.Options, error) {
	h, err := home.Resolve(a.getenv)
	if err != nil {
		return report.Options{}, err
	}
	o := report.Options{Home: h, Generator: "git corral " + version}
	o.Snapshots = func(ctx context.Context) ([]vm.Snapshot, error) {
		m, err := a.manager()
		if err != nil {
			return nil, err
		}
		return m.Snapshots(ctx, o.Box)
	}
	dir, err := a.workDir()
	if err != nil {
		return o, err
	}
	if cdir, rec, rerr := clone.FindRecord(dir); rerr == nil {
		real, err := filepath.EvalSymlinks(cdir)
		if err != nil {
			return o, err
		}
		o.Box = project.BoxName(real)
		o.CloneStore, o.CloneBranch = h.CloneStore(o.Box), rec.Branch
		o.Policy = policy.LoadOptions{Home: h, Box: o.Box}
		return a.otherBox(o)
	} else if !errors.Is(rerr, clone.ErrNoRecord) {
		return o, rerr
	}
	p, err := a.project(ctx)
	if err != nil {
		return o, err
	}
	o.Box, o.Project = p.Box, p
	if o.Policy, err = a.loadOptions(ctx, ""); err != nil {
		return o, err
	}
	if a.box != "" && a.box != p.Box {
		return a.otherBox(o)
	}
	if o.ConfigPaths, err = configPaths(ctx, p); err != nil {
		return o, err
	}
	return o, nil
}

// otherBox points o at the box --box names when it is not this directory's: its checkout is
// elsewhere, so the record has its host-side logs and trusted configuration only.
func (a *app) otherBox(o report.Options) (report.Options, error) {
	if a.box == "" || a.box == o.Box {
		return o, nil
	}
	if !validBoxName(a.box) {
		return o, usageErrorf("report", "--box %q is not a box name (lower-case letters, digits and '-')", a.box)
	}
	o.Box, o.Project, o.ConfigPaths, o.CloneStore = a.box, nil, nil, ""
	o.Policy = policy.LoadOptions{Home: o.Home, Box: a.box}
	return o, nil
}

// reportVerify checks a report file and says what it checked; a failure names the section.
func (a *app) reportVerify(file, allowed string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("read report: %w", err)
	}
	v, err := report.Verify(b, report.VerifyOptions{AllowedSigners: allowed})
	if sec := report.SectionOf(err); sec != "" {
		return withHint(fmt.Errorf("report %s does not verify: %w", visible.String(file), err),
			fmt.Sprintf("the %q part was changed after the record was made, or signed by a key the allowed-signers file does not list for namespace %q", sec, report.Namespace))
	}
	if err != nil {
		return err
	}
	rec := v.Record.Sections.Record
	what := rec.Kind + " " + rec.Session
	if rec.Kind == report.KindBox {
		what = "every session"
	}
	fmt.Fprintf(a.stdout, "%s: box %s, %s: %d section hashes and the digest %s hold\n", visible.String(file), visible.String(rec.Box), visible.String(strings.TrimSpace(what)), len(v.Sections), v.Digest)
	switch {
	case v.Signature == nil:
		fmt.Fprintf(a.stderr, "corral: warning: %s is not signed: its hashes show it is whole, not who made it\n", visible.String(file))
	case allowed == "":
		fmt.Fprintf(a.stdout, "signature: good, by %s %s\n", v.Signature.Key.Type(), v.Signature.Fingerprint)
		fmt.Fprintf(a.stderr, "corral: warning: the signer was not checked: pass --allowed-signers FILE to require a key you trust\n")
	default:
		fmt.Fprintf(a.stdout, "signature: good, by %s %s, listed in %s as %s\n", v.Signature.Key.Type(), v.Signature.Fingerprint,
			visible.String(allowed), visible.String(strings.Join(v.Principals, ", ")))
	}
	return nil
}
