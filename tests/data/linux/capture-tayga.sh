#!/bin/sh
# How tayga-*.txt were made (tayga 0.9.2, Debian 12): client ns (IPv6) -> DUT ns (tayga + iptables
# SNAT) -> public ns (IPv4), 4 source ports x 2 destination ports of UDP through the NAT64 prefix
# 2001:db8:64::/96. (With the well-known prefix 64:ff9b::/96 tayga drops traffic to 198.19.0.2:
# RFC 6052 forbids the WKP for non-global IPv4 and tayga treats 198.18.0.0/15 as non-global.)
# Run as root from tests/data/linux: sh capture-tayga.sh
set -eu
T=tg$$; C=${T}c; D=${T}d; P=${T}p; DD=$(mktemp -d)
cleanup() { ip netns del $C 2>/dev/null; ip netns del $D 2>/dev/null; ip netns del $P 2>/dev/null; rm -rf "$DD"; }
trap cleanup EXIT
ip netns add $C; ip netns add $D; ip netns add $P
for n in $C $D $P; do ip -n $n link set lo up; done
ip link add ${T}a netns $C type veth peer name ${T}i netns $D
ip link add ${T}o netns $D type veth peer name ${T}b netns $P
ip -n $C addr add 2001:2::2/64 dev ${T}a nodad; ip -n $C link set ${T}a up; ip -n $C route add default via 2001:2::1
ip -n $D addr add 2001:2::1/64 dev ${T}i nodad; ip -n $D link set ${T}i up
ip -n $D addr add 198.19.0.1/24 dev ${T}o; ip -n $D link set ${T}o up
ip -n $P addr add 198.19.0.2/24 dev ${T}b; ip -n $P link set ${T}b up
printf 'tun-device %s\nipv4-addr %s\nipv6-addr %s\nprefix %s\ndynamic-pool %s\ndata-dir %s\n' \
    nat64 10.127.0.1 2001:2:0:ffff::1 2001:db8:64::/96 10.127.0.0/16 "$DD" > "$DD/tayga.conf"
ip netns exec $D sh -c "
echo 1 > /proc/sys/net/ipv4/ip_forward; echo 1 > /proc/sys/net/ipv6/conf/all/forwarding
tayga --config $DD/tayga.conf --mktun > /dev/null
ip link set nat64 up
ip route add 10.127.0.0/16 dev nat64
ip route add 2001:db8:64::/96 dev nat64
tayga --config $DD/tayga.conf --pidfile $DD/tayga.pid
iptables -t nat -A POSTROUTING -s 10.127.0.0/16 -o ${T}o -j SNAT --to-source 198.19.0.1
"
sleep 1.5   # link-local DAD on the veths
ip netns exec $C python3 -c '
import socket
for sp in range(30000, 30004):
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); s.bind(("2001:2::2", sp))
    for dp in (80, 81): s.sendto(b"natbench", ("2001:db8:64::c613:2", dp))
'
sleep 0.3
ip netns exec $D conntrack -L -p udp > tayga-conntrack-L.txt 2>/dev/null
ip netns exec $D conntrack -C > tayga-conntrack-C.txt
kill "$(cat $DD/tayga.pid)"; sleep 0.3   # tayga writes dynamic.map when it exits
cat "$DD/dynamic.map" > tayga-dynamic-map.txt
ip netns exec $D tayga --config "$DD/tayga.conf" --rmtun > tayga-rmtun.txt
