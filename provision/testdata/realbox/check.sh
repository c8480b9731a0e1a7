#!/bin/bash
# Run in the box as the box user. Probes only the slirp gateway (the host's own loopback) and
# slirp's DNS address, and only after the guard check says the lockdown holds.
echo "ID=$(id)"
s=$(date +%s%N)
g=$(sudo -n /usr/local/libexec/corral/guard-check); rc=$?
echo "GUARD=$rc $g ($(( ($(date +%s%N) - s) / 1000000 )) ms)"
case "$g" in '{"ok":true'*) ;; *) echo "guard not ok: no network probes"; exit 1 ;; esac
sudo -n true 2>/dev/null && echo SUDO=yes || echo SUDO=no
su -c true root </dev/null >/dev/null 2>&1 && echo SU=yes || echo SU=no
echo "SETID=$(stat -c '%n:%a' /usr/bin/su /usr/bin/sudo /usr/bin/newgrp /usr/bin/passwd 2>/dev/null | tr '\n' ' ')"
if command -v pkexec >/dev/null; then pkexec true && echo PKEXEC=yes || echo PKEXEC=no; else echo PKEXEC=absent; fi
timeout 5 bash -c 'exec 3<>/dev/tcp/192.168.5.2/18099; head -c2 <&3' 2>/dev/null && echo HOSTLOOP=yes || echo HOSTLOOP=no
timeout 5 bash -c 'echo x >/dev/udp/192.168.5.3/53' 2>/dev/null && echo DNSUDP=sent || echo DNSUDP=blocked
timeout 5 bash -c 'exec 3<>/dev/tcp/192.168.5.3/53' 2>/dev/null && echo DNSTCP=yes || echo DNSTCP=no
timeout 5 bash -c 'exec 3<>/dev/tcp/fec0::2/18099; head -c2 <&3' 2>/dev/null && echo HOSTLOOP6=yes || echo HOSTLOOP6=no
echo "IPV6=$(ip -6 -br addr | tr '\n' ' ')"
echo "GROUPS=$(id -nG)"
echo "SUDOERS=$(find /etc/sudoers.d -mindepth 1 -printf "%f ")"
echo "WHO=$(tr '\n' ' ' </tmp/who.out)"
