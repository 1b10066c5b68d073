/*
 * Reference for bench/tester_capacity.py: the most minimal AF_PACKET loop with
 * the same I/O primitives as the natbench software tester. It sends one fixed,
 * prebuilt UDP frame with sendmmsg() in batches of 64 as fast as it can on
 * interface A and counts frames arriving on interface B with recvmmsg()
 * (MSG_DONTWAIT, 128-byte snap) in the same thread, with no pacing, no frame
 * building, no checksums and no checks.
 *
 * usage: blaster NETNS IF_A IF_B FRAME_SIZE SECONDS
 * prints: sent=<n> received=<n> seconds=<s>
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCH 64

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int open_port(const char *ifname) {
    int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
    if (fd < 0) { perror("socket"); exit(1); }
    int one = 1, buf = 64 << 20;
    setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
    setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf));
    struct sockaddr_ll sll = {0};
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(ETH_P_ALL);
    sll.sll_ifindex = (int)if_nametoindex(ifname);
    if (!sll.sll_ifindex || bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) { perror(ifname); exit(1); }
    return fd;
}

int main(int argc, char **argv) {
    if (argc != 6) { fprintf(stderr, "usage: %s NETNS IF_A IF_B FRAME_SIZE SECONDS\n", argv[0]); return 2; }
    char path[256];
    snprintf(path, sizeof(path), "/run/netns/%s", argv[1]);
    int ns = open(path, O_RDONLY);
    if (ns < 0 || setns(ns, CLONE_NEWNET) < 0) { perror("setns"); return 1; }
    int a = open_port(argv[2]), b = open_port(argv[3]);
    size_t len = (size_t)atoi(argv[4]) - 4;
    double seconds = atof(argv[5]);
    static uint8_t frame[2048];
    memset(frame, 0xff, 6);                         /* broadcast destination */
    memcpy(frame + 6, "\x02\x00\x00\x00\x00\x01", 6);
    frame[12] = 0x08; frame[13] = 0x00;             /* IPv4, UDP; checksums left zero (not checked) */
    frame[14] = 0x45; frame[23] = 17;
    uint16_t tot = (uint16_t)(len - 14);
    frame[16] = tot >> 8; frame[17] = tot & 0xff;
    struct mmsghdr tx[BATCH], rx[BATCH];
    struct iovec txv[BATCH], rxv[BATCH];
    static uint8_t rbuf[BATCH][128];
    for (int i = 0; i < BATCH; i++) {
        txv[i].iov_base = frame; txv[i].iov_len = len;
        memset(&tx[i], 0, sizeof(tx[i])); tx[i].msg_hdr.msg_iov = &txv[i]; tx[i].msg_hdr.msg_iovlen = 1;
        rxv[i].iov_base = rbuf[i]; rxv[i].iov_len = sizeof(rbuf[i]);
        memset(&rx[i], 0, sizeof(rx[i])); rx[i].msg_hdr.msg_iov = &rxv[i]; rx[i].msg_hdr.msg_iovlen = 1;
    }
    unsigned long long sent = 0, received = 0;
    double t0 = now(), t = t0;
    while (t - t0 < seconds) {
        int r = sendmmsg(a, tx, BATCH, MSG_DONTWAIT);
        if (r > 0) sent += (unsigned)r;
        int n;
        while ((n = recvmmsg(b, rx, BATCH, MSG_DONTWAIT, NULL)) > 0) received += (unsigned)n;
        t = now();
    }
    double send_end = t;
    for (double d = now(); now() - d < 0.2;) {
        int n = recvmmsg(b, rx, BATCH, MSG_DONTWAIT, NULL);
        if (n > 0) received += (unsigned)n;
    }
    printf("sent=%llu received=%llu seconds=%.6f\n", sent, received, send_end - t0);
    return 0;
}
