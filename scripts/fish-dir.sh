#!/bin/sh
# fish-dir.sh completions|conf PREFIX: the directory `make install` puts fish's completions or
# its git hook (conf.d) in. fish reads them only from its own vendor directories, which it makes
# from XDG_DATA_DIRS: with that unset (a login on a Debian console or over ssh), Debian's fish
# 3.6 reads /usr/share/fish/vendor_*.d and not /usr/local/share/fish/vendor_*.d, so a default
# install was never seen. So for the default PREFIX, /usr/local, PREFIX's directory is used
# when fish, run as a user with a fresh environment would run it, reads it, and otherwise
# fish's own system configuration directory (/etc/fish/completions or /etc/fish/conf.d on
# Debian), which fish always reads and no package owns. Any other PREFIX is the installer's
# choice and is kept (fish reads ~/.local/share/fish/vendor_*.d for PREFIX=~/.local, and
# /usr/share/fish/vendor_*.d for PREFIX=/usr); so is PREFIX's directory without fish.
set -eu
kind=$1
prefix=$2
case $kind in
completions) sub=vendor_completions.d var=__fish_vendor_completionsdirs sys=completions ;;
conf) sub=vendor_conf.d var=__fish_vendor_confdirs sys=conf.d ;;
*) echo "usage: fish-dir.sh completions|conf PREFIX" >&2; exit 2 ;;
esac
want=$prefix/share/fish/$sub
if [ "$prefix" != /usr/local ] || ! command -v fish >/dev/null 2>&1; then
	echo "$want"
	exit 0
fi
# shellcheck disable=SC2016 # fish expands these, not sh
dirs=$(env -u XDG_DATA_DIRS -u XDG_DATA_HOME HOME=/nonexistent fish -c 'printf "%s\n" $'"$var"'; echo "sysconf $__fish_sysconf_dir"' 2>/dev/null) || dirs=
if printf '%s\n' "$dirs" | grep -qxF "$want"; then
	echo "$want"
	exit 0
fi
sysconf=$(printf '%s\n' "$dirs" | sed -n 's/^sysconf //p')
if [ -z "$sysconf" ]; then
	echo "$want"
	exit 0
fi
echo "$sysconf/$sys"
