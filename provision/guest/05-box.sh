#!/bin/sh
# git corral 05-box: this box's own values, written where the product's scripts read them. The
# product's scripts then are byte for byte the same in every box of a guest recipe, so a box
# resumed from a golden state built for another project runs only this script again, not the
# base files or the privilege drop (vm/golden_state.go).
set -eu
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
umask 022
{{.InstallFile}}
install -d -m 0755 -o root -g root /etc/corral
# The project's mount point in the box ('' for a box without one: clone mode).
printf '%s\n' {{.ProjectDir}} | install_file /etc/corral/project-dir 0644
