#!/bin/sh
# git corral 15-git-credential: git_tokens is set, so the box gets git corral's git credential
# helper and the system git configuration that names it. Both are root-owned and rewritten at
# every boot, so the box user cannot replace them. No token is written here or anywhere on the
# guest's disk: the helper reads CORRAL_GIT_TOKEN_<n> from the environment of each session,
# which travels in the SSH channel.
set -eu
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
umask 022
{{.InstallFile}}

install -d -m 0755 -o root -g root /usr/local/libexec /usr/local/libexec/corral
{{heredoc .CredentialHelperPath "0755" .CredentialHelper}}

# /etc/gitconfig is git corral's: the image ships none, and this file is rewritten at every boot.
{{heredoc "/etc/gitconfig" "0644" .GitConfig}}
echo "corral: git credential helper installed"
