# git corral session check. Installed root-owned at /usr/local/libexec/corral/session-check.
# Two ways in:
#   in-band: `git corral run` starts its command in the same SSH session, right after it, as
#       . /usr/local/libexec/corral/session-check inband && cd DIR && CMD...
#     in the box user's login shell (bash). It writes one line to stderr before the command can
#     start, "<RS>corral-guard-check " and the JSON report, and returns 1 unless every check
#     passed, so the command never runs in a box whose guards failed.
#   json: `guard-check session` runs it as its own process and prints the report on stdout.
# What it checks is guard-check.sh's "session" part: the boot's attestation (the root-only
# state the deep check saw at this boot) and what the box user can see or change live: the
# groups this session holds, root-run paths and container sockets it could write,
# reverse-sshfs mounts, the git shadow's mounts. Bash builtins only: under software emulation
# every process the guest starts costs tens of milliseconds, and this starts none.
# Sourced into the caller's shell, it changes nothing there: variables are local, shell
# options are restored on return (local -), its two functions are unset.
# Values below were fixed when the box was rendered; nothing is read from the environment.
__corral_session_check() {
	local how=${1-}
	local -
	set -f +u
	local IFS=$' \t\n'
	local mode={{.Mode}} user={{.User}} shadow={{.ShadowExpected}} cover={{.CoverExpected}}
	local attest=/run/corral/attest expect=/run/corral/shadow.expect
	local forbidden=" {{.ForbiddenGroups}} " roots={{.RootPaths}} sockets={{.Sockets}}
	local out='' p s g n t re P G S M line kind e o ok json
	local uid=-1 pgid='' others='' ingroup='' held='' self='' boot='' aboot='' amode='' aend='' sshfs='' nexp=0
	local -A bad=() opts=()
	local -a afail=() lines=() ml=()
	if [[ $mode != full ]]; then
		for p in $roots; do
			if [[ ! -e $p ]]; then
				__corral_fail "root-run path $p is missing"
			elif [[ -O $p || -w $p ]]; then
				__corral_fail "root-run path $p is writable by the box user"
			fi
		done
		for s in $sockets; do
			if [[ -S $s && -w $s ]]; then __corral_fail "box user can use container socket $s"; fi
		done
		# Every virtio port, a channel to the host (virtio-serial).
		set +f
		for s in /dev/virtio-ports/* /dev/vport*; do
			if [[ -e $s ]] && [[ -r $s || -w $s ]]; then
				__corral_fail "box user can open the virtio port $s (a channel to the host, root's only)"
			fi
		done
		set -f
		if [[ -f $attest ]] && [[ -O $attest || -w $attest ]]; then
			__corral_fail "boot-time attestation $attest is writable by the box user"
		fi
	fi
	# Each file is read whole and searched with regular expressions (linear; a loop over
	# lines costs ~0.15 ms per line under emulation, and the shell's own ${x#*pattern} is
	# quadratic). A trailing (.*) keeps the rest of the text, to search again from there.
	read -r boot </proc/sys/kernel/random/boot_id
	IFS= read -r -d '' P </etc/passwd || :
	IFS= read -r -d '' G </etc/group || :
	IFS= read -r -d '' S </proc/self/status || :
	IFS= read -r -d '' M </proc/self/mountinfo || :
	P=$'\n'$P G=$'\n'$G S=$'\n'$S M=$'\n'$M
	# User and group names are plain (render.go checks the user, the groups are fixed): no
	# regular expression characters to escape.
	re=$'\n'$user$':[^:\n]*:([0-9]+):([0-9]+):'
	if [[ $P =~ $re ]]; then uid=${BASH_REMATCH[1]} pgid=${BASH_REMATCH[2]}; fi
	re=$'\n([^:\n]*):[^:\n]*:0:(.*)'
	t=$P
	while [[ $t =~ $re ]]; do
		if [[ ${BASH_REMATCH[1]} != root ]]; then others+=" ${BASH_REMATCH[1]}"; fi
		t=${BASH_REMATCH[2]}
	done
	# name:password:gid:members, for each forbidden group the file has.
	for n in $forbidden; do
		re=$'\n'$n$':[^:\n]*:([0-9]+):([^\n]*)'
		[[ $G =~ $re ]] || continue
		bad[${BASH_REMATCH[1]}]=$n
		if [[ ,${BASH_REMATCH[2]}, == *",$user,"* ]]; then ingroup+=" $n"; fi
	done
	re=$'\nUid:[ \t]*[0-9]+[ \t]+([0-9]+)'
	if [[ $S =~ $re ]]; then self=${BASH_REMATCH[1]}; fi
	re=$'\nGid:[ \t]*[0-9]+[ \t]+([0-9]+)'
	if [[ $S =~ $re && -n ${bad[${BASH_REMATCH[1]}]+x} ]]; then held+=" ${bad[${BASH_REMATCH[1]}]}"; fi
	re=$'\nGroups:([^\n]*)'
	if [[ $S =~ $re ]]; then
		for g in ${BASH_REMATCH[1]}; do
			if [[ -n ${bad[$g]+x} ]]; then held+=" ${bad[$g]}"; fi
		done
	fi
	# Mount points in mountinfo escape space, tab, newline and backslash as \NNN octal; the
	# fields are: id, parent, dev, root, mount point, options, optional..., -, type, source.
	if [[ $M == *" - fuse.sshfs "* ]]; then
		mapfile -t lines <<<"${M#$'\n'}"
		for t in "${lines[@]}"; do
			# shellcheck disable=SC2086
			set -- $t
			if [[ $t == *" - fuse.sshfs "* ]]; then sshfs+=" $5"; fi
		done
	fi
	if [[ $mode != full && -f $attest ]]; then
		mapfile -t lines <"$attest"
		for line in "${lines[@]}"; do
			case $line in
			"boot "*) aboot=${line#boot } ;;
			"mode "*) amode=${line#mode } ;;
			"fail "*) afail+=("${line#fail }") ;;
			end) aend=1 ;;
			esac
		done
	fi
	if [[ -n $sshfs ]]; then __corral_fail "reverse-sshfs mounts reach the whole host filesystem:$sshfs"; fi
	if [[ $mode != full ]]; then
		if [[ $uid == -1 ]]; then
			__corral_fail "box user $user does not exist"
		elif [[ $uid == 0 ]]; then
			__corral_fail "box user $user has uid 0"
		fi
		if [[ -n $others ]]; then __corral_fail "accounts other than root have uid 0:$others"; fi
		if [[ -n $ingroup ]]; then __corral_fail "box user is in root-equivalent groups:$ingroup"; fi
		if [[ -n $pgid && -n ${bad[$pgid]+x} ]]; then __corral_fail "box user primary group is ${bad[$pgid]}"; fi
		if [[ $self != "$uid" ]]; then __corral_fail "the session runs as uid $self, not as box user $user"; fi
		if [[ -n $held ]]; then __corral_fail "the session holds root-equivalent groups:$held"; fi
		if [[ -z $aend ]]; then
			__corral_fail "boot-time attestation $attest is missing or incomplete: the lockdown or the privilege drop did not finish at this boot"
		elif [[ $aboot != "$boot" ]]; then
			__corral_fail "boot-time attestation is from another boot"
		elif [[ $amode != "$mode" ]]; then
			__corral_fail "boot-time attestation is for mode $amode, not $mode"
		fi
		for a in "${afail[@]}"; do __corral_fail "at boot: $a"; done
	fi
	if [[ $shadow == 1 ]]; then
		if [[ -f $expect ]]; then
			mapfile -t lines <"$expect"
			if ((${#lines[@]} > 32)); then
				# Many mounts (a tree of submodules): one pass over the table beats a search each.
				mapfile -t ml <<<"${M#$'\n'}"
				for t in "${ml[@]}"; do
					# shellcheck disable=SC2086
					set -- $t
					if (($# >= 6)); then opts[$5]+=" $6"; fi
				done
			fi
			for line in "${lines[@]}"; do
				[[ -n $line ]] || continue
				kind=${line%% *} p=${line#* }
				nexp=$((nexp + 1))
				e=${p//\\/\\134}
				e=${e// /\\040}
				e=${e//$'\t'/\\011}
				__corral_mount_opts "$e"
				if [[ -z $o ]]; then
					__corral_fail "git shadow mount $p is not in place"
					continue
				fi
				[[ $kind == ro ]] || continue
				for o in $o; do
					if [[ ,$o, != *,ro,* ]]; then
						__corral_fail "git shadow mount $p is writable ($o)"
						break
					fi
				done
			done
		fi
		if ((nexp == 0)); then __corral_fail "git shadow expectations $expect are missing"; fi
	fi
	if [[ $cover == 1 ]]; then __corral_cover; fi
	ok=true
	[[ -z $out ]] || ok=false
	json="{\"ok\":$ok,\"mode\":\"$mode\",\"failures\":[$out]}"
	if [[ $how == json ]]; then
		printf '%s\n' "$json"
	else
		printf '\036corral-guard-check %s\n' "$json" >&2
	fi
	[[ -z $out ]]
}

# __corral_mount_opts sets o to the options of every mount at the escaped mount point $1, in
# table order ("" when none): from the pass over the table when there was one, else by
# searching the table text for lines whose fifth field is $1 (escaped for the expression).
__corral_mount_opts() {
	local t=$M c re
	o=''
	if ((${#opts[@]} > 0)); then
		o=${opts[$1]-}
		return
	fi
	re=${1//\\/\\\\}
	for c in . '[' ']' '(' ')' '{' '}' '*' + '?' '^' '$' '|'; do
		re=${re//"$c"/"\\$c"}
	done
	re=$'\n[^ \n]+ [^ \n]+ [^ \n]+ [^ \n]+ '$re$' ([^ \n]+)(.*)'
	while [[ $t =~ $re ]]; do
		o+=" ${BASH_REMATCH[1]}"
		t=${BASH_REMATCH[2]}
	done
}

# __corral_cover checks the hide and box_dirs mounts (package cover) as guard-check.sh's
# check_cover does, in the caller's variables: each "hide PATH" covered and read-only, each
# "boxdir PATH" mounted, each "absent PATH" still missing or covered read-only (by the daemon).
__corral_cover() {
	local cexpect=/run/corral/cover.expect ncover=0
	if [[ ! -f $cexpect || -O $cexpect || -w $cexpect ]]; then
		__corral_fail "hide and box_dirs expectations $cexpect are missing or writable by the box user"
		return
	fi
	mapfile -t lines <"$cexpect"
	for line in "${lines[@]}"; do
		[[ -n $line ]] || continue
		kind=${line%% *} p=${line#* }
		ncover=$((ncover + 1))
		e=${p//\\/\\134}
		e=${e// /\\040}
		e=${e//$'\t'/\\011}
		__corral_mount_opts "$e"
		case $kind in
		hide)
			if [[ -z $o ]]; then
				__corral_fail "hidden path $p is not hidden"
				continue
			fi
			for o in $o; do
				if [[ ,$o, != *,ro,* ]]; then
					__corral_fail "hidden path $p is covered writable ($o)"
					break
				fi
			done
			;;
		boxdir) if [[ -z $o ]]; then __corral_fail "box_dirs directory $p is not mounted from the box's disk"; fi ;;
		pin) if [[ -z $o ]]; then __corral_fail "directory $p holding a hidden path is not pinned"; fi ;;
		absent)
			if [[ -L $p || (-e $p && -z $o) ]]; then
				__corral_fail "hidden path $p appeared after the box booted and is not hidden: this check cannot hide it; the guard daemon does at the next session start, or restart the box"
			elif [[ -e $p ]]; then
				for o in $o; do
					if [[ ,$o, != *,ro,* ]]; then
						__corral_fail "hidden path $p is covered writable ($o)"
						break
					fi
				done
			fi
			;;
		esac
	done
	if ((ncover == 0)); then __corral_fail "hide and box_dirs expectations $cexpect are empty"; fi
}

# __corral_fail adds one failure to the report as a JSON string: control characters dropped,
# backslash and double quote written as \u escapes.
__corral_fail() {
	local s=${1//[$'\001'-$'\037'$'\177']/}
	s=${s//\\/\\u005c}
	s=${s//\"/\\u0022}
	out+="${out:+,}\"$s\""
}

# Sourced, return ends the sourcing; run as a program, return fails and exit ends it.
# shellcheck disable=SC2317
if __corral_session_check "$@"; then
	unset -f __corral_session_check __corral_fail __corral_mount_opts __corral_cover
	return 0 2>/dev/null || exit 0
fi
unset -f __corral_session_check __corral_fail __corral_mount_opts __corral_cover
# shellcheck disable=SC2317
return 1 2>/dev/null || exit 1
