#!/bin/sh
# Builds a valid repository with N absorbed submodules in DIR/top (for the discovery benchmark):
#   many.sh [-i] N DIR
# With -i the submodules are also initialised (git submodule init: submodule.NAME.url and
# .active in top/.git/config), as in a clone made with --recurse-submodules; only then does
# git submodule status do its per-submodule work, so its figure is a fair baseline.
# One template submodule is made with git, then copied N times as .git/modules/mNNNN with its
# core.worktree and a .git file in the work tree, and registered in .gitmodules and the index
# as gitlinks in one update-index call, which is what git submodule add would leave behind.
set -eu
init=
if [ "${1:-}" = -i ]; then
	init=1
	shift
fi
n=$1
dir=$2
mkdir -p "$dir"
cd "$dir"
git init -q -b main tmpl
echo module >tmpl/file
git -C tmpl add file
git -C tmpl commit -q -m module
sha=$(git -C tmpl rev-parse HEAD)
git init -q -b main top
i=0
: >top/.gitmodules
: >index-info
while [ "$i" -lt "$n" ]; do
	m=$(printf 'm%04d' "$i")
	cp -r tmpl/.git "top/.git/modules-$m"
	mkdir -p top/.git/modules
	mv "top/.git/modules-$m" "top/.git/modules/$m"
	git config -f "top/.git/modules/$m/config" core.worktree "../../../$m"
	mkdir "top/$m"
	cp tmpl/file "top/$m/file"
	printf 'gitdir: ../.git/modules/%s\n' "$m" >"top/$m/.git"
	printf '[submodule "%s"]\n\tpath = %s\n\turl = ../tmpl\n' "$m" "$m" >>top/.gitmodules
	printf '160000 %s\t%s\n' "$sha" "$m" >>index-info
	i=$((i + 1))
done
git -C top update-index --index-info <index-info
git -C top add .gitmodules
git -C top commit -q -m "$n submodules"
if [ -n "$init" ]; then
	git -C top submodule init -q
fi
