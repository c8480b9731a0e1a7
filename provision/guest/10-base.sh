#!/bin/sh
# git corral 10-base: the product's own files every box gets, in every network mode. Runs as
# root at every boot (Lima re-runs provisioning); rewrites the same files each time.
set -eu
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
umask 022
{{.InstallFile}}
MODE={{.Mode}}

install -d -m 0755 -o root -g root /etc/corral /usr/local/libexec /usr/local/libexec/corral
printf '%s\n' "$MODE" | install_file /etc/corral/mode 0644

# The guard check the host runs over SSH before every session.
{{heredoc "/usr/local/libexec/corral/guard-check" "0755" .GuardCheck}}
# The session check, which guard-check runs and `git corral run` sources before its command.
{{heredoc "/usr/local/libexec/corral/session-check" "0755" .SessionCheck}}
# The resident guard daemon the host asks before every session (through SSH stream-local
# forwarding), restarted at every boot so that it runs the script just installed.
{{heredoc "/usr/local/libexec/corral/guardd" "0755" .GuardDaemon}}
{{heredoc "/etc/systemd/system/corral-guardd.service" "0644" .GuardUnit}}
install -d -m 0755 -o root -g root /run/corral
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload
	systemctl enable corral-guardd.service >/dev/null 2>&1
	systemctl restart corral-guardd.service
fi

# Lima's guest agent runs as the box user, not root (guestagent-ns says why): the drop-in
# replaces the command of Lima's unit, which Lima's boot script (re)installs before this runs.
{{heredoc "/usr/local/libexec/corral/guestagent-ns" "0755" .GuestAgentNS}}
install -d -m 0755 -o root -g root /etc/systemd/system/lima-guestagent.service.d
{{heredoc "/etc/systemd/system/lima-guestagent.service.d/50-corral.conf" "0644" .GuestAgentDropIn}}
# Restarted only while it still runs as root (Lima's boot script started it so): a box whose
# agent already runs as the box user keeps its connection to Lima's host agent.
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload
	for p in /proc/[0-9]*; do
		[ "$(cat "$p/comm" 2>/dev/null)" = lima-guestagent ] || continue
		if awk '$1 == "Uid:" && ($2 == 0 || $3 == 0) { found = 1 } END { exit !found }' "$p/status" 2>/dev/null; then
			systemctl try-restart lima-guestagent.service
			break
		fi
	done
fi

# Login shells: the agent store's launchers on PATH (agents-profile.sh).
install -d -m 0755 -o root -g root /etc/profile.d
{{heredoc "/etc/profile.d/corral-agents.sh" "0644" .AgentsProfile}}

# sshd: the session's environment travels in the SSH channel (SendEnv/SetEnv on the host side),
# never on the command line.
install -d -m 0755 /etc/ssh/sshd_config.d
{{heredoc "/etc/ssh/sshd_config.d/50-corral.conf" "0644" .SSHDConf}}
if [ -d /run/systemd/system ] && command -v sshd >/dev/null 2>&1; then
	sshd -t
	systemctl try-reload-or-restart ssh.service
fi
echo "corral: base files installed ($MODE)"
