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
{{- if .BrokerPort}}
# This box's broker port on the gateway, which the broker-mode ruleset includes (nft.go says why
# it is not in the ruleset itself).
{{heredoc .BrokerPortFile "0644" .BrokerPort}}
# At a golden-state resume the lockdown in memory is the build box's, with its port: it is
# loaded again with this box's (one nft transaction: on failure the old one stays, closed), and
# checked again, as 20-lockdown checks it at a boot. The attestation of this boot exists only
# then: at a boot, 20-lockdown loads the ruleset after this script.
if [ -f /run/corral/attest ] && grep -qxF 'include "{{.BrokerPortFile}}"' /etc/corral/lockdown.nft 2>/dev/null; then
	nft -f /etc/corral/lockdown.nft
	/usr/local/libexec/corral/guard-check network >/dev/null || {
		/usr/local/libexec/corral/guard-check network >&2 || true
		echo "corral: the broker lockdown did not take hold with this box's port" >&2
		exit 1
	}
	echo "corral: broker lockdown loaded again for this box's port"
fi
{{- else}}
rm -f {{.BrokerPortFile}}
{{- end}}
