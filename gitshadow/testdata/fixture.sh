#!/bin/sh
# Builds the test repositories in $1 (fixed author, committer and dates come from the
# environment the test sets). Layout:
#   src/leaf, src/mid (submodule leaf), src/extra      upstream repositories
#   work/                      clone of mid's parent "top" with submodules, recursively
#     .git/modules/a           absorbed submodule a (core.hooksPath = .husky)
#     .git/modules/a/modules/b nested absorbed submodule b inside a
#     plain/.git/              a submodule that is not absorbed (a .git directory)
#     project.gitconfig        included by .git/config (include.path = ../project.gitconfig)
#     .git/config.worktree     with extensions.worktreeConfig
#   wt/                        a linked worktree of work (.git/worktrees/wt)
set -eu
root=$1
mkdir -p "$root/src"
cd "$root/src"
commit() { git add -A && git commit -q -m "$1"; }

git init -q -b main leaf
echo leaf >leaf/file && (cd leaf && commit leaf)
git init -q -b main mid
echo mid >mid/file
(cd mid && git submodule add -q ../leaf b && commit mid)
git init -q -b main extra
echo extra >extra/file && (cd extra && commit extra)
git init -q -b main top
echo top >top/file
mkdir top/.husky-src
(cd top && git submodule add -q ../mid a && commit top)

cd "$root"
git clone -q --bare src/top src/remote.git
git clone -q --recurse-submodules src/top work
cd work
git clone -q ../src/extra plain
git submodule add -q ../extra plain
mkdir -p a/.husky
echo '[core]' >project.gitconfig
commit "plain submodule"
git remote add bare ../src/remote.git
git config include.path ../project.gitconfig
git config extensions.worktreeConfig true
git config --worktree user.name "Corral Test"
git -C a config core.hooksPath .husky
git worktree add -q -b wtbranch ../wt
git -C ../wt config --worktree user.email wt@example.com
