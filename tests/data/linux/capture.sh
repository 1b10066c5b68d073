#!/bin/sh
# How the captures in this directory were made (Debian 12 VM, kernel 6.18, conntrack-tools 1.4.7,
# nftables 1.0.6, iptables 1.8.9 nf_tables, tayga 0.9.2). Run as root from tests/data/linux:
#   sh capture.sh
# It builds three throw-away namespaces (client -> DUT -> public) joined by veth pairs, installs
# MASQUERADE in the DUT, sends a few UDP frames, captures the tools' output and removes everything.
set -eu
S=cap$$
C=${S}c; D=${S}d; P=${S}p
cleanup() { ip netns del $C 2>/dev/null || true; ip netns del $D 2>/dev/null || true; ip netns del $P 2>/dev/null || true; }
trap cleanup EXIT
ip netns add $C; ip netns add $D; ip netns add $P
ip link add ${S}a netns $C type veth peer name ${S}b netns $D
ip link add ${S}e netns $D type veth peer name ${S}f netns $P
ip -n $C addr add 198.18.0.2/24 dev ${S}a; ip -n $C link set ${S}a up; ip -n $C link set lo up
ip -n $C route add default via 198.18.0.1
ip -n $D addr add 198.18.0.1/24 dev ${S}b; ip -n $D link set ${S}b up
ip -n $D addr add 198.19.0.1/24 dev ${S}e; ip -n $D link set ${S}e up; ip -n $D link set lo up
ip -n $P addr add 198.19.0.2/24 dev ${S}f; ip -n $P link set ${S}f up
ip netns exec $D sysctl -qw net.ipv4.ip_forward=1
ip netns exec $D iptables -t nat -A POSTROUTING -o ${S}e -j MASQUERADE
ip netns exec $D nft add table inet natbench_capture
ip netns exec $D nft add chain inet natbench_capture post '{ type nat hook postrouting priority srcnat; }'
ip netns exec $D nft add rule inet natbench_capture post oifname ${S}e masquerade
ip netns exec $C python3 -c '
import socket
s = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(3)]
for i, sock in enumerate(s):
    sock.bind(("198.18.0.2", 10000 + i))
    for d in (80, 81):
        sock.sendto(b"natbench", ("198.19.0.2", d))
'
sleep 0.2
ip netns exec $D conntrack -C > conntrack-C.txt
ip netns exec $D conntrack -L -p udp > conntrack-L.txt 2> conntrack-L.stderr.txt
ip netns exec $D conntrack -S > conntrack-S.txt
ip netns exec $D conntrack -F 2> conntrack-F.stderr.txt
ip netns exec $D conntrack -C > conntrack-C-empty.txt
ip netns exec $D conntrack -L -p udp > conntrack-L-empty.txt 2> conntrack-L-empty.stderr.txt
cat /proc/stat > proc-stat.txt
grep -E '^(MemTotal|MemFree|MemAvailable|Slab|SReclaimable|SUnreclaim):' /proc/meminfo > meminfo.txt
grep -E '^(# name|slabinfo|nf_conntrack)' /proc/slabinfo > slabinfo.txt 2>/dev/null || true
ip netns exec $D nft list ruleset > nft-list-ruleset.txt
ip netns exec $D nft -j list ruleset > nft-list-ruleset.json
ip netns exec $D iptables -t nat -S > iptables-nat-S.txt
ip netns exec $D iptables --version > iptables-version.txt
conntrack --version > conntrack-version.txt 2>&1 || true
nft --version > nft-version.txt
tayga --help > tayga-help.txt 2>&1 || true
