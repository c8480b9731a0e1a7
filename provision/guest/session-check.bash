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
	local -
	set -f +u
	local IFS=$' \t\n'
	local mode={{.Mode}} user={{.User}} shadow={{.ShadowExpected}}
	local attest=/run/corral/attest expect=/run/corral/shadow.expect
	local forbidden=" {{.ForbiddenGroups}} " roots={{.RootPaths}} sockets={{.Sockets}}
	local out='' p s n u g m k a b rest mp op line kind e o ok json
	local uid=-1 pgid='' others='' ingroup='' held='' self='' boot='' aboot='' amode='' aend='' sshfs='' nexp=0
	local -A bad=() opts=()
	local -a afail=()
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
		if [[ -f $attest ]] && [[ -O $attest || -w $attest ]]; then
			__corral_fail "boot-time attestation $attest is writable by the box user"
		fi
	fi
	read -r boot </proc/sys/kernel/random/boot_id
	while IFS=: read -r n k u g rest; do
		if [[ $n == "$user" ]]; then uid=$u pgid=$g; fi
		if [[ $u == 0 && $n != root ]]; then others+=" $n"; fi
	done </etc/passwd
	while IFS=: read -r n k g m; do
		[[ -n $g && $forbidden == *" $n "* ]] || continue
		bad[$g]=$n
		if [[ ,$m, == *",$user,"* ]]; then ingroup+=" $n"; fi
	done </etc/group
	while read -r k a b rest; do
		case $k in
		Uid:) self=$b ;;
		Gid:) if [[ -n $b && -n ${bad[$b]+x} ]]; then held+=" ${bad[$b]}"; fi ;;
		Groups:)
			for g in $a $b $rest; do
				if [[ -n ${bad[$g]+x} ]]; then held+=" ${bad[$g]}"; fi
			done
			;;
		esac
	done </proc/self/status
	# Mount points in mountinfo escape space, tab, newline and backslash as \NNN octal.
	while read -r a b k k mp op rest; do
		opts[$mp]+=" $op"
		if [[ " $rest " == *" - fuse.sshfs "* ]]; then sshfs+=" $mp"; fi
	done </proc/self/mountinfo
	if [[ $mode != full && -f $attest ]]; then
		while IFS= read -r line; do
			case $line in
			"boot "*) aboot=${line#boot } ;;
			"mode "*) amode=${line#mode } ;;
			"fail "*) afail+=("${line#fail }") ;;
			end) aend=1 ;;
			esac
		done <"$attest"
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
			while IFS= read -r line; do
				[[ -n $line ]] || continue
				kind=${line%% *} p=${line#* }
				nexp=$((nexp + 1))
				e=${p//\\/\\134}
				e=${e// /\\040}
				e=${e//$'\t'/\\011}
				if [[ -z ${opts[$e]+x} ]]; then
					__corral_fail "git shadow mount $p is not in place"
					continue
				fi
				[[ $kind == ro ]] || continue
				for o in ${opts[$e]}; do
					if [[ ,$o, != *,ro,* ]]; then
						__corral_fail "git shadow mount $p is writable ($o)"
						break
					fi
				done
			done <"$expect"
		fi
		if ((nexp == 0)); then __corral_fail "git shadow expectations $expect are missing"; fi
	fi
	ok=true
	[[ -z $out ]] || ok=false
	json="{\"ok\":$ok,\"mode\":\"$mode\",\"failures\":[$out]}"
	if [[ ${1-} == json ]]; then
		printf '%s\n' "$json"
	else
		printf '\036corral-guard-check %s\n' "$json" >&2
	fi
	[[ -z $out ]]
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
	unset -f __corral_session_check __corral_fail
	return 0 2>/dev/null || exit 0
fi
unset -f __corral_session_check __corral_fail
# shellcheck disable=SC2317
return 1 2>/dev/null || exit 1
