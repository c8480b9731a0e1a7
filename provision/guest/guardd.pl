#!/usr/bin/perl
# git corral guard daemon. Installed root-owned at /usr/local/libexec/corral/guardd and run as
# root by corral-guardd.service from the first boot script on. It answers every connection on
# /run/corral/guard.sock with one JSON report {"ok","mode","failures"} about the connecting
# process and closes it; it reads nothing from the client. The host reaches it through the SSH
# connection (stream-local forwarding: the peer is then the box user's sshd), in parallel with
# opening the session, before any of the session's values are sent.
#
# It checks what the session check (session-check.bash) checks, for the peer's credentials
# and mount namespace, but it is resident (no process start per session, which costs tens of
# milliseconds under software emulation) and it runs as root: code running as the box user
# cannot forge its report. Writability by the box user is computed from owner, group and mode
# bits (no ACLs), as the deep check does.
# Values below were fixed when the box was rendered.
use strict;
use warnings;
use Socket qw(SOL_SOCKET SO_PEERCRED SOCK_STREAM);
use IO::Socket::UNIX;

my $MODE      = '{{.Mode}}';
my $USER      = {{.User}};
my $SHADOW    = {{.ShadowExpected}};
my $COVER     = {{.CoverExpected}};
my @FORBIDDEN = split ' ', '{{.ForbiddenGroups}}';
my @ROOTS     = split ' ', {{.RootPaths}};
my @SOCKETS   = split ' ', {{.Sockets}};
my $ATTEST    = '/run/corral/attest';
my $EXPECT    = '/run/corral/shadow.expect';
my $COVER_HIDE = '/run/corral/cover-hide';    # package cover's HelperPath
my $SOCK      = $ARGV[0] // '/run/corral/guard.sock';

$ENV{PATH} = '/usr/sbin:/usr/bin:/sbin:/bin';
$SIG{PIPE} = 'IGNORE';
unlink $SOCK;
umask 0111;
my $srv = IO::Socket::UNIX->new(Type => SOCK_STREAM, Local => $SOCK, Listen => 64)
  or die "corral guardd: listen on $SOCK: $!\n";
umask 022;
print STDERR "corral guardd: listening on $SOCK\n";
while (1) {
	my $c = $srv->accept or next;
	my $json = eval { report($c) };
	$json = reply(["the guard daemon failed: " . ($@ || 'no report')]) unless defined $json;
	$c->blocking(0);
	syswrite $c, $json;
	close $c;
}

# report returns the JSON report for the process on the other end of $c.
sub report {
	my ($c) = @_;
	my $cred = getsockopt($c, SOL_SOCKET, SO_PEERCRED) or return reply(["cannot read the peer's credentials: $!"]);
	my ($pid, $puid) = unpack 'i3', $cred;
	my @f;
	my $locked = $MODE ne 'full';
	my %forbidden = map { $_ => 1 } @FORBIDDEN;

	my ($uid, $pgid, @others) = (-1, undef);
	for (lines('/etc/passwd')) {
		my @x = split /:/, $_, -1;
		($uid, $pgid) = ($x[2], $x[3]) if $x[0] eq $USER;
		push @others, $x[0] if defined $x[2] && $x[2] eq '0' && $x[0] ne 'root';
	}
	my (%bad, @ingroup);
	for (lines('/etc/group')) {
		my @x = split /:/, $_, -1;
		next unless $forbidden{ $x[0] } && defined $x[2] && $x[2] =~ /^\d+$/;
		$bad{ $x[2] } = $x[0];
		push @ingroup, $x[0] if grep { $_ eq $USER } split /,/, ($x[3] // '');
	}
	# The session: the peer's own credentials, as its sshd passes them to every command.
	my (@groups, $egid, @held);
	for (lines("/proc/$pid/status")) {
		my @x = split ' ';
		my $k = shift @x;
		next unless defined $k;
		$egid = $x[1] if $k eq 'Gid:';
		@groups = @x if $k eq 'Groups:';
	}
	push @held, $bad{$egid} if defined $egid && $bad{$egid};
	push @held, map { $bad{$_} } grep { $bad{$_} } @groups;
	my %member = map { $_ => 1 } @groups, (defined $egid ? $egid : ());

	if ($locked) {
		for my $p (@ROOTS) {
			my @st = stat $p;
			if (!@st) { push @f, "root-run path $p is missing"; next }
			push @f, "root-run path $p is writable by the box user" if owned_or_writable(\@st, $puid, \%member);
		}
		for my $s (@SOCKETS) {
			my @st = stat $s;
			push @f, "box user can use container socket $s" if @st && -S _ && writable(\@st, $puid, \%member);
		}
		# Every virtio port, a channel to the host (virtio-serial). (Whether Lima's guest
		# agent runs as root is the boot's attestation's business: only root could restart it
		# as root, so a live scan of /proc here would only slow every session.)
		for my $s (glob('/dev/virtio-ports/* /dev/vport*')) {
			my @st = stat $s;
			next unless @st && !-S _;
			push @f, "box user can open the virtio port $s (a channel to the host, root's only)"
			  if readable(\@st, $puid, \%member) || writable(\@st, $puid, \%member);
		}
		my @st = stat $ATTEST;
		push @f, "boot-time attestation $ATTEST is writable by the box user" if @st && -f _ && owned_or_writable(\@st, $puid, \%member);
	}

	push @f, cover_late($pid) if $COVER eq '1';    # before the mounts are read: cover() checks its work
	my (%opts, @sshfs);
	for (lines("/proc/$pid/mountinfo")) {
		my @x = split / /;
		next if @x < 7;
		$opts{ $x[4] } .= " $x[5]";
		for my $i (6 .. $#x - 1) {
			next unless $x[$i] eq '-';
			push @sshfs, $x[4] if $x[ $i + 1 ] eq 'fuse.sshfs';
			last;
		}
	}
	push @f, "reverse-sshfs mounts reach the whole host filesystem: @sshfs" if @sshfs;

	if ($locked) {
		my ($boot) = lines('/proc/sys/kernel/random/boot_id');
		my ($aboot, $amode, $aend, @afail) = ('', '', 0);
		if (-f $ATTEST) {
			for (lines($ATTEST)) {
				if (/^boot (.*)$/) { $aboot = $1 }
				elsif (/^mode (.*)$/) { $amode = $1 }
				elsif (/^fail (.*)$/) { push @afail, $1 }
				elsif ($_ eq 'end') { $aend = 1 }
			}
		}
		if ($uid eq '-1') { push @f, "box user $USER does not exist" }
		elsif ($uid eq '0') { push @f, "box user $USER has uid 0" }
		push @f, "accounts other than root have uid 0: @others" if @others;
		push @f, "box user is in root-equivalent groups: @ingroup" if @ingroup;
		push @f, "box user primary group is $bad{$pgid}" if defined $pgid && $bad{$pgid};
		push @f, "the session runs as uid $puid, not as box user $USER" if "$puid" ne "$uid";
		push @f, "the session holds root-equivalent groups: @held" if @held;
		if (!$aend) {
			push @f, "boot-time attestation $ATTEST is missing or incomplete: the lockdown or the privilege drop did not finish at this boot";
		} elsif ($aboot ne ($boot // '')) {
			push @f, "boot-time attestation is from another boot";
		} elsif ($amode ne $MODE) {
			push @f, "boot-time attestation is for mode $amode, not $MODE";
		}
		push @f, map { "at boot: $_" } @afail;
	}
	if ($SHADOW eq '1') {
		my $n = 0;
		for my $line (-f $EXPECT ? lines($EXPECT) : ()) {
			next if $line eq '';
			my ($kind, $p) = split / /, $line, 2;
			$p //= '';
			$n++;
			(my $e = $p) =~ s/([\\ \t\n])/sprintf('\\%03o', ord $1)/ge;
			if (!exists $opts{$e}) { push @f, "git shadow mount $p is not in place"; next }
			next unless $kind eq 'ro';
			for my $o (split ' ', $opts{$e}) {
				if (",$o," !~ /,ro,/) { push @f, "git shadow mount $p is writable ($o)"; last }
			}
		}
		push @f, "git shadow expectations $EXPECT are missing" if $n == 0;
	}
	push @f, cover(\%opts) if $COVER eq '1';
	return reply(\@f);
}

# cover checks the hide and box_dirs mounts (package cover) against /run/corral/cover.expect,
# as guard-check.sh's check_cover does: "hide PATH" covered and read-only, "boxdir PATH"
# mounted, "absent PATH" still missing or, once cover_late covered it, covered and read-only.
# It returns the failures.
sub cover {
	my ($opts) = @_;
	my $file = '/run/corral/cover.expect';
	my @st = stat $file;
	return ("hide and box_dirs expectations $file are missing or not owned by root") unless @st && -f _ && $st[4] == 0;
	my (@f, $n);
	for my $line (lines($file)) {
		next if $line eq '';
		my ($kind, $p) = split / /, $line, 2;
		$p //= '';
		$n++;
		(my $e = $p) =~ s/([\\ \t\n])/sprintf('\\%03o', ord $1)/ge;
		if ($kind eq 'absent') {
			next unless -e $p || -l $p;
			if (!exists $opts->{$e}) {
				push @f, "hidden path $p appeared after the box booted and is not hidden: the guard daemon hides it"
				  . " at session start only for a session in the box's main mount namespace; otherwise restart the box"
				  . " ('git corral stop', then start)";
				next;
			}
			for my $o (split ' ', $opts->{$e}) {
				if (",$o," !~ /,ro,/) { push @f, "hidden path $p is covered writable ($o)"; last }
			}
		} elsif (!exists $opts->{$e}) {
			push @f, $kind eq 'hide' ? "hidden path $p is not hidden"
			  : $kind eq 'pin' ? "directory $p holding a hidden path is not pinned"
			  :                  "box_dirs directory $p is not mounted from the box's disk";
		} elsif ($kind eq 'hide') {
			for my $o (split ' ', $opts->{$e}) {
				if (",$o," !~ /,ro,/) { push @f, "hidden path $p is covered writable ($o)"; last }
			}
		}
	}
	push @f, "hide and box_dirs expectations $file are empty" unless $n;
	return @f;
}

# cover_late hides each path recorded absent at boot that exists now, so that the session
# starts with it hidden, without a reboot: it runs package cover's helper (the boot script's
# own, which refuses a symlink, a FIFO or a swapped name) for each. It acts only for a session
# in PID 1's mount namespace, and enters that namespace to run the helper: a namespace the box
# user made holds binaries and files the box user chose. It returns the helper's failures.
sub cover_late {
	my ($pid) = @_;
	my @late;
	for my $line (lines('/run/corral/cover.expect')) {
		next if $line eq '';
		my ($kind, $p) = split / /, $line, 2;
		push @late, $p if $kind eq 'absent' && defined $p && (-e $p || -l $p);
	}
	return () unless @late;
	my ($ns, $init) = (readlink("/proc/$pid/ns/mnt"), readlink('/proc/1/ns/mnt'));
	return () unless defined $ns && defined $init && $ns eq $init;    # cover() refuses
	my @st = stat $COVER_HIDE;
	return ("hidden paths appeared after the box booted, and the helper $COVER_HIDE that hides them"
		  . " is missing or not root's: restart the box")
	  unless @st && -f _ && $st[4] == 0 && !($st[2] & 022);
	my @f;
	for my $p (@late) {
		my $err = run_cover_hide($p);
		push @f, "hidden path $p appeared after the box booted and cannot be hidden: $err" if defined $err;
	}
	return @f;
}

# run_cover_hide runs the helper for $p in PID 1's mount namespace and root directory; undef
# when it succeeded, else its last line of output.
sub run_cover_hide {
	my ($p) = @_;
	my $kid = open(my $fh, '-|') // return "cannot fork: $!";
	if (!$kid) {
		open STDERR, '>&', \*STDOUT;
		my @ns = ('--mount=/proc/1/ns/mnt', '--root=/proc/1/root', '--wd=/proc/1/root');
		exec 'nsenter', @ns, '--', 'perl', $COVER_HIDE, $p;
		print "cannot run nsenter: $!\n";
		exit 127;
	}
	my @out = <$fh>;
	close $fh;
	return undef if $? == 0;
	my $last = @out ? $out[-1] : "exit status $?";
	$last =~ s/\s+$//;
	return $last;
}

# owned_or_writable: the box user owns the file or may write it (the session check's -O or -w).
sub owned_or_writable {
	my ($st, $uid, $member) = @_;
	return $st->[4] == $uid || writable($st, $uid, $member);
}

# readable: by owner, group or other mode bits for the box user's uid and groups.
sub readable {
	my ($st, $uid, $member) = @_;
	my $mode = $st->[2];
	return 1 if $st->[4] == $uid && ($mode & 0400);
	return 1 if $st->[4] != $uid && $member->{ $st->[5] } && ($mode & 0040);
	return 1 if $st->[4] != $uid && !$member->{ $st->[5] } && ($mode & 0004);
	return 0;
}

# writable: by owner, group or other mode bits for the box user's uid and groups.
sub writable {
	my ($st, $uid, $member) = @_;
	my $mode = $st->[2];
	return 1 if $st->[4] == $uid && ($mode & 0200);
	return 1 if $st->[4] != $uid && $member->{ $st->[5] } && ($mode & 0020);
	return 1 if $st->[4] != $uid && !$member->{ $st->[5] } && ($mode & 0002);
	return 0;
}

# lines returns a file's lines without their newlines; none when it cannot be read.
sub lines {
	my ($path) = @_;
	open my $fh, '<', $path or return ();
	local $/ = "\n";
	my @l = <$fh>;
	chomp @l;
	return @l;
}

# reply is the JSON report for these failures: control characters dropped, backslash and
# double quote as \u escapes.
sub reply {
	my ($f) = @_;
	my @s = map {
		(my $s = $_) =~ s/[\x00-\x1f\x7f]//g;
		$s =~ s/\\/\\u005c/g;
		$s =~ s/"/\\u0022/g;
		"\"$s\"";
	} @$f;
	return sprintf qq({"ok":%s,"mode":"%s","failures":[%s]}\n), (@s ? 'false' : 'true'), $MODE, join(',', @s);
}
