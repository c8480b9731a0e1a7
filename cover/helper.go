package cover

import (
	"fmt"
	"strings"
)

// HelperPath is the root-only helper the boot script installs at every boot: the one
// implementation of "cover this hidden path". The boot script runs it for each hidden path that
// exists at boot; the guard daemon (provision/guest/guardd.pl) runs it, in the session's mount
// namespace, for each path recorded absent at boot that exists at a session's start.
const HelperPath = "/run/corral/cover-hide"

// helperText is the helper, in Perl (the guard daemon's language, so every box that has the
// daemon can run it). It takes one absolute path under the project's top level. It pins each
// directory between the top level and the path (mounted onto itself, so none can be renamed
// away), then covers the path with the empty root-owned placeholder of its type, read-only.
// A path or directory already mounted over is left as it is, so it can run again.
//
// It never follows a name the box user may have planted: each path must be a regular file or a
// directory (lstat: a symlink or a FIFO is refused), then is opened as a handle with O_PATH (no
// read access needed, a FIFO cannot block it) and O_NOFOLLOW; the handle must be the inode
// lstat saw, of the same type (a name swapped meanwhile fails); the mount is made onto the handle
// (/proc/self/fd/N, not canonicalized), so a name swapped after the check cannot redirect it;
// and after mounting, the path must show the placeholder (or, pinned, be a mount point). Any
// failure exits non-zero with one line on standard error: the caller refuses the session.
const helperText = `#!/usr/bin/perl
# git corral: cover one hidden path (rendered by package cover; installed by the boot script).
use strict;
use warnings;
use Fcntl qw(O_NOFOLLOW F_GETFD F_SETFD FD_CLOEXEC S_ISREG S_ISDIR);

use constant O_PATH => 010000000;    # Linux, x86_64 and arm64 alike; Fcntl does not export it

$ENV{PATH} = '/usr/sbin:/usr/bin:/sbin:/bin';
my $STATE = '{{STATE}}';
my $TOP   = {{TOP}};
my $path  = $ARGV[0] // '';
fail("usage: cover-hide PATH") unless @ARGV == 1;
my $rel = substr($path, 0, length($TOP) + 1) eq "$TOP/" ? substr($path, length($TOP) + 1) : '';
my @parts = split m{/}, $rel, -1;
fail("$path: not a clean path under $TOP") if !@parts || grep { $_ eq '' || $_ eq '.' || $_ eq '..' } @parts;
my $d = $TOP;
for my $i (0 .. $#parts - 1) {
	$d .= "/$parts[$i]";
	last unless -e $d || -l $d;
	cover($d, 'pin');
}
cover($path, 'hide');
exit 0;

sub fail { print STDERR "cover: $_[0]\n"; exit 1 }

# mounted: $p is a mount point in this mount namespace (mountinfo's field 5, unescaped).
sub mounted {
	my ($p) = @_;
	open my $fh, '<', '/proc/self/mountinfo' or fail("cannot read /proc/self/mountinfo: $!");
	while (<$fh>) {
		my $m = (split / /)[4] // next;
		$m =~ s/\\([0-7]{3})/chr oct $1/ge;
		return 1 if $m eq $p;
	}
	return 0;
}

# run runs a command for the path $p; its failure is $p's.
sub run {
	my ($p, @cmd) = @_;
	system(@cmd) == 0 or fail("$p: @cmd failed");
}

# cover pins the directory $p ($how 'pin') or hides $p ($how 'hide'), through a handle.
sub cover {
	my ($p, $how) = @_;
	return if mounted($p);
	my @l = lstat $p or fail("$p: $!");
	fail("$p: a symlink, not followed") if -l _;
	my $dir = S_ISDIR($l[2]);
	fail("$p: not a regular file or a directory") unless $dir || S_ISREG($l[2]);
	fail("$p: not a directory") if $how eq 'pin' && !$dir;
	sysopen(my $fh, $p, O_PATH | O_NOFOLLOW) or fail("$p: cannot open: $!");
	my @h = stat $fh or fail("$p: $!");
	fail("$p: changed while it was checked") if $h[0] != $l[0] || $h[1] != $l[1] || $h[2] != $l[2];
	my $flags = fcntl($fh, F_GETFD, 0) // fail("$p: $!");
	fcntl($fh, F_SETFD, $flags & ~FD_CLOEXEC) // fail("$p: $!");
	my $at = '/proc/self/fd/' . fileno($fh);
	if ($how eq 'pin') {
		run($p, 'mount', '--no-canonicalize', '--rbind', '--', $at, $at);
		fail("$p: the pin did not land on the path") unless mounted($p);
		run($p, 'mount', '--no-canonicalize', '--make-rprivate', '--', $p);
		return;
	}
	my $src = $dir ? "$STATE/empty-dir" : "$STATE/empty-file";
	my @s = stat $src or fail("$src: $!");
	run($p, 'mount', '--no-canonicalize', '--bind', '--', $src, $at);
	my @a = lstat $p;
	fail("$p: the cover did not land on the path") unless @a && $a[0] == $s[0] && $a[1] == $s[1] && mounted($p);
	run($p, 'mount', '--no-canonicalize', '--make-private', '--', $p);
	run($p, 'mount', '--no-canonicalize', '-o', 'remount,bind,ro', '--', $p);
}
`

// HelperScript renders the helper for the project directory top (the boot script installs it
// at HelperPath; tests of the guard daemon install it themselves).
func HelperScript(top string) (string, error) {
	if strings.ContainsAny(top, "\x00\n") {
		return "", fmt.Errorf("render the cover helper: project directory %q cannot be one line", top)
	}
	q := "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(top) + "'"
	s := strings.Replace(helperText, "{{STATE}}", GuestStateDir, 1)
	return strings.Replace(s, "{{TOP}}", q, 1), nil
}
