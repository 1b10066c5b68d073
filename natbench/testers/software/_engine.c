/*
 * natbench software tester: the data path.
 *
 * One call of run() - one thread, pinned by the caller to a tester CPU -
 * drives up to two transmit streams and up to two receive ports over
 * AF_PACKET sockets. Several calls may run at once on other threads (the
 * caller splits a trial into lanes, one per CPU): they then share a small
 * "sync" block that tells receive-only lanes when the last sender finished.
 * An optional "watch" block publishes each stream's sent and each port's
 * valid count as the trial runs; its first word, set by a monitor on
 * another thread, ends every stream with the frames due by that moment
 * (a trial that has failed):
 *   - transmit: frames are built on the fly into a fixed set of batch buffers
 *     (only ports, payload fields and the UDP checksum change per frame; the
 *     checksum is updated from a precomputed partial sum) and sent with
 *     sendmmsg(), paced against CLOCK_MONOTONIC;
 *   - receive: recvmmsg() in batches, only the first bytes of each frame are
 *     copied; a frame counts as valid when its payload carries the natbench
 *     magic, this trial's tag and the expected direction (and, where the
 *     stream allows it, ports consistent with its sequence number); phase-1
 *     frames teach the Responder the translated source port of enumeration
 *     index k (uint16 per connection); tagged frames yield latency samples
 *     from the kernel receive timestamp (tagging starts at frame tag_start,
 *     then every tag_every-th frame, at most tag_count frames); with a delay
 *     histogram every valid frame's one-way delay is counted in it (PDV over
 *     all frames: log-linear buckets, exact below 1024 ns, relative bucket
 *     width at most 1/512 above; memory fixed, independent of the trial).
 * No Python runs per packet; the GIL is released for the whole trial.
 * Frame layout: natbench/traffic/frames.py (the two must agree; tests check).
 */
#define PY_SSIZE_T_CLEAN
#define _GNU_SOURCE
#include <Python.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCH 64
#define SPIN_NS 20000ull /* wake-up margin: spin rather than sleep when a deadline is this close */
#define SNAP 128
#define MAX_TX 2
#define MAX_RX 2

#define MAGIC 0x4E42
#define FLAG_REVERSE 0x0001
#define FLAG_TAGGED 0x0002

/* Delay histogram: values below 2^HIST_BITS ns have a bucket each; above, each power of two is split
 * into 2^(HIST_BITS-1) buckets, so a bucket is at most 1/2^(HIST_BITS-1) of its lower edge wide. */
#define HIST_BITS 10
#define HIST_HALF (1u << (HIST_BITS - 1))
#define HIST_SIZE ((1u << HIST_BITS) + (64u - HIST_BITS) * HIST_HALF)

static inline uint64_t hist_index(uint64_t v) {
    if (v < (1ull << HIST_BITS)) return v;
    unsigned shift = (unsigned)(63 - __builtin_clzll(v)) - (HIST_BITS - 1);
    return (1ull << HIST_BITS) + (uint64_t)(shift - 1) * HIST_HALF + ((v >> shift) - HIST_HALF);
}

enum tx_mode { TX_ENUM = 0, TX_RANDOM = 1, TX_TUPLE_RANDOM = 2, TX_TUPLE_LINEAR = 3, TX_TUPLE_FIXED = 4 };
enum rx_mode { RX_ANY = 0, RX_ENUM_CHECK = 1, RX_LEARN = 2, RX_TUPLE_CHECK = 3 };
enum order { ORDER_PRODUCT = 0, ORDER_FEISTEL = 1 };
#define PERM_ROUNDS 4

/* ---------- small helpers ---------- */

static inline uint64_t now_ns(clockid_t clk) {
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t splitmix_next(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Unbiased integer in [0, bound) (Lemire), the same algorithm as natbench.traffic.SplitMix64.below. */
static inline uint64_t splitmix_below(uint64_t *state, uint64_t bound) {
    uint64_t threshold = (0 - bound) % bound;
    for (;;) {
        unsigned __int128 m = (unsigned __int128)splitmix_next(state) * bound;
        if ((uint64_t)m >= threshold) return (uint64_t)(m >> 64);
    }
}

/* ---------- phase-1 pair index: the permutation pi of natbench.traffic.enumeration (its docstring) ---------- */

typedef struct {
    uint64_t n;    /* N = |S| * |D| */
    int feistel;   /* 0: pi(k) = k (product order) */
    unsigned high; /* width of the high part in round 0; the low part has bits - high */
    unsigned low;
    uint64_t key[PERM_ROUNDS];
} perm_t;

static inline uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void perm_init(perm_t *p, uint64_t n, int order, uint64_t subseed) {
    memset(p, 0, sizeof(*p));
    p->n = n;
    p->feistel = order == ORDER_FEISTEL;
    unsigned bits = 2;
    while (bits < 64 && (1ull << bits) < n) bits++;
    p->high = bits - bits / 2;
    p->low = bits / 2;
    uint64_t st = subseed;
    for (int i = 0; i < PERM_ROUNDS; i++) p->key[i] = splitmix_next(&st);
}

/* E(x): the rounds over [0, 2**bits) */
static inline uint64_t perm_encrypt(const perm_t *p, uint64_t x) {
    unsigned high = p->high, low = p->low;
    for (int i = 0; i < PERM_ROUNDS; i++) {
        uint64_t right = x & ((1ull << low) - 1), left = x >> low;
        x = (right << high) | ((left ^ mix64(right ^ p->key[i])) & ((1ull << high) - 1));
        unsigned t = high;
        high = low;
        low = t;
    }
    return x;
}

/* pi(k) for k < n: cycle walking until the value falls inside [0, n) */
static inline uint64_t perm_apply(const perm_t *p, uint64_t k) {
    if (!p->feistel) return k;
    uint64_t y = perm_encrypt(p, k);
    while (y >= p->n) y = perm_encrypt(p, y);
    return y;
}

static inline uint16_t rd16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }
static inline uint32_t rd32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline uint64_t rd64(const uint8_t *p) { return ((uint64_t)rd32(p) << 32) | rd32(p + 4); }
static inline void wr16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static inline void wr32(uint8_t *p, uint32_t v) { wr16(p, (uint16_t)(v >> 16)); wr16(p + 2, (uint16_t)v); }
static inline void wr64(uint8_t *p, uint64_t v) { wr32(p, (uint32_t)(v >> 32)); wr32(p + 4, (uint32_t)v); }

static uint32_t sum16(const uint8_t *p, size_t n) {
    uint32_t s = 0;
    size_t i;
    for (i = 0; i + 1 < n; i += 2) s += rd16(p + i);
    if (n & 1) s += (uint32_t)p[n - 1] << 8;
    return s;
}

static inline uint16_t fold(uint64_t s) {
    while (s >> 16) s = (s & 0xFFFF) + (s >> 16);
    return (uint16_t)s;
}

/* ---------- frame building (shared by the data path and the test hook) ---------- */

typedef struct {
    int ipv6;
    size_t len;    /* bytes handed to the socket (frame size minus FCS) */
    size_t l4;     /* offset of the UDP header */
    uint32_t base; /* partial one's-complement sum of everything constant in the UDP checksum */
} layout_t;

/* Compute layout and checksum base of a template whose variable fields are zero and whose tag is set. */
static int layout_init(layout_t *lo, const uint8_t *tpl, size_t len, int ipv6) {
    lo->ipv6 = ipv6;
    lo->len = len;
    lo->l4 = 14 + (ipv6 ? 40 : 20);
    if (len < lo->l4 + 8 + 18) return -1;
    size_t udp_len = len - lo->l4;
    uint32_t s = 0;
    if (ipv6) {
        s += sum16(tpl + 14 + 8, 32); /* addresses */
        s += (uint32_t)(udp_len >> 16) + (uint32_t)(udp_len & 0xFFFF) + 17;
    } else {
        s += sum16(tpl + 14 + 12, 8);
        s += 17 + (uint32_t)udp_len;
    }
    s += sum16(tpl + lo->l4, udp_len); /* ports, checksum, seq, stamp, flags are zero in the template */
    lo->base = s;
    return 0;
}

static inline void frame_fill(const layout_t *lo, uint8_t *f, uint16_t sport, uint16_t dport, uint32_t seq,
                              uint64_t stamp, uint16_t flags) {
    uint8_t *u = f + lo->l4;
    uint8_t *p = u + 8;
    wr16(u, sport);
    wr16(u + 2, dport);
    wr32(p + 4, seq);
    wr64(p + 8, stamp);
    wr16(p + 16, flags);
    uint64_t s = lo->base;
    s += sport;
    s += dport;
    s += (seq >> 16) + (seq & 0xFFFF);
    s += (stamp >> 48) + ((stamp >> 32) & 0xFFFF) + ((stamp >> 16) & 0xFFFF) + (stamp & 0xFFFF);
    s += flags;
    uint16_t c = (uint16_t)~fold(s);
    if (c == 0) c = 0xFFFF;
    wr16(u + 6, c);
}

/* ---------- buffers from Python ---------- */

typedef struct {
    Py_buffer view;
    int held;
} buf_t;

static int get_buf(PyObject *d, const char *key, buf_t *b, int writable, Py_ssize_t itemsize) {
    b->held = 0;
    PyObject *o = PyDict_GetItemString(d, key); /* borrowed */
    if (o == NULL || o == Py_None) return 0;
    if (PyObject_GetBuffer(o, &b->view, writable ? (PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) : PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    b->held = 1;
    if (itemsize && b->view.len % itemsize) {
        PyErr_Format(PyExc_ValueError, "buffer %s: length not a multiple of %zd", key, itemsize);
        return -1;
    }
    return 0;
}

static void rel_buf(buf_t *b) {
    if (b->held) PyBuffer_Release(&b->view);
    b->held = 0;
}

static int get_ll(PyObject *d, const char *key, long long dflt, long long *out) {
    PyObject *o = PyDict_GetItemString(d, key);
    if (o == NULL || o == Py_None) {
        *out = dflt;
        return 0;
    }
    *out = PyLong_AsLongLong(o);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

static int get_dbl(PyObject *d, const char *key, double dflt, double *out) {
    PyObject *o = PyDict_GetItemString(d, key);
    if (o == NULL || o == Py_None) {
        *out = dflt;
        return 0;
    }
    *out = PyFloat_AsDouble(o);
    return (*out == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

/* The "order" and "perm_seed" of a tx stream or rx port dict (order product when absent). */
static int get_perm(PyObject *d, perm_t *p, uint64_t n) {
    long long v;
    if (get_ll(d, "order", ORDER_PRODUCT, &v) < 0) return -1;
    if (v != ORDER_PRODUCT && v != ORDER_FEISTEL) {
        PyErr_SetString(PyExc_ValueError, "order must be ORDER_PRODUCT or ORDER_FEISTEL");
        return -1;
    }
    PyObject *so = PyDict_GetItemString(d, "perm_seed");
    uint64_t seed = (so && so != Py_None) ? (uint64_t)PyLong_AsUnsignedLongLongMask(so) : 0;
    if (PyErr_Occurred()) return -1;
    perm_init(p, n, (int)v, seed);
    return 0;
}

/* ---------- streams ---------- */

typedef struct {
    int fd;
    int mode;
    layout_t lo;
    buf_t tpl, a, b;
    const uint16_t *pa, *pb;
    uint64_t na, nb;
    uint64_t start, count, sent, next_i;
    double rate;
    uint64_t time_limit_ns;
    uint16_t flags;
    uint64_t tag_every, tag_start, tag_count;
    int stamp_each; /* PDV over every frame: each frame gets its own send stamp as it is built */
    uint64_t rng;
    perm_t perm; /* TX_ENUM: frame index k -> pair index pi(k) */
    uint8_t *frames; /* BATCH * len */
    struct mmsghdr msgs[BATCH];
    struct iovec iov[BATCH];
    uint64_t first_ns, last_ns, errors, calls, max_lag;
    double catchup;    /* a backlog goes out at most at catchup x rate (0: as fast as the socket takes it) */
    double cu_tokens;  /* the catch-up token bucket: frames that may go out now, at most one batch */
    uint64_t cu_ns;    /* when the bucket was last refilled (0: not yet) */
    uint64_t behind_ns, step_ns; /* time spent more than a batch behind schedule; the previous step's clock */
    int done;
    int stopped;         /* ended by the watch's stop flag before all its frames were sent */
    long long watch_slot; /* index in the watch block where the frames sent so far are published (-1: none) */
} tx_t;

typedef struct {
    int fd;
    int mode;
    int reverse;
    buf_t dst, learned, tsport, texpect, lat, hist;
    const uint16_t *pdst;
    uint64_t ndst, nsrc;
    perm_t perm; /* RX_ENUM_CHECK / RX_LEARN: sequence number k -> pair index pi(k) */
    uint16_t *plearned;
    uint64_t nlearned;
    const uint16_t *ptsport, *ptexpect;
    uint64_t ntuple;
    int64_t *plat;
    uint64_t lat_cap;
    uint64_t *phist;                         /* HIST_SIZE counters of every valid frame's delay (PDV) */
    uint64_t d_n, d_neg;                     /* frames counted in it; of which with a negative delay */
    int64_t d_min, d_max;                    /* exact extremes of those delays */
    uint64_t expect;
    uint64_t received, valid, bad, dup, learned_new, lat_n, lat_over, foreign;
    uint32_t want_src4;   /* IPv4 source the learned tuples must come from (0: any) */
    long long watch_slot; /* index in the watch block where the valid frames so far are published (-1: none) */
    uint8_t bufs[BATCH][SNAP];
    uint8_t ctl[BATCH][CMSG_SPACE(sizeof(struct timespec))];
    struct mmsghdr msgs[BATCH];
    struct iovec iov[BATCH];
} rx_t;

static void tx_free(tx_t *t) {
    rel_buf(&t->tpl);
    rel_buf(&t->a);
    rel_buf(&t->b);
    PyMem_RawFree(t->frames);
    t->frames = NULL;
}

static void rx_free(rx_t *r) {
    rel_buf(&r->dst);
    rel_buf(&r->learned);
    rel_buf(&r->tsport);
    rel_buf(&r->texpect);
    rel_buf(&r->lat);
    rel_buf(&r->hist);
}

static int tx_init(tx_t *t, PyObject *d, uint16_t tag) {
    long long v;
    memset(t, 0, sizeof(*t));
    if (!PyDict_Check(d)) {
        PyErr_SetString(PyExc_TypeError, "tx stream must be a dict");
        return -1;
    }
    if (get_ll(d, "fd", -1, &v) < 0) return -1;
    t->fd = (int)v;
    if (get_ll(d, "watch_slot", -1, &t->watch_slot) < 0) return -1;
    if (get_ll(d, "mode", TX_ENUM, &v) < 0) return -1;
    t->mode = (int)v;
    if (get_buf(d, "template", &t->tpl, 0, 1) < 0 || !t->tpl.held) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "tx stream needs a template");
        return -1;
    }
    if (get_ll(d, "ipv6", 0, &v) < 0) return -1;
    uint8_t *tpl = (uint8_t *)PyMem_RawMalloc((size_t)t->tpl.view.len);
    if (!tpl) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy(tpl, t->tpl.view.buf, (size_t)t->tpl.view.len);
    size_t len = (size_t)t->tpl.view.len;
    size_t l4 = 14 + (v ? 40 : 20);
    if (len < l4 + 8 + 18) {
        PyMem_RawFree(tpl);
        PyErr_SetString(PyExc_ValueError, "template too short for the natbench payload");
        return -1;
    }
    /* zero the variable fields, set magic and tag */
    memset(tpl + l4, 0, 4);
    memset(tpl + l4 + 6, 0, 2);
    wr16(tpl + l4 + 8, MAGIC);
    wr16(tpl + l4 + 10, tag);
    memset(tpl + l4 + 12, 0, 14);
    layout_init(&t->lo, tpl, len, (int)v);
    if (get_buf(d, "a", &t->a, 0, 2) < 0 || get_buf(d, "b", &t->b, 0, 2) < 0) {
        PyMem_RawFree(tpl);
        return -1;
    }
    if (!t->a.held || !t->b.held || t->a.view.len == 0 || t->b.view.len == 0) {
        PyMem_RawFree(tpl);
        PyErr_SetString(PyExc_ValueError, "tx stream needs non-empty port arrays a and b");
        return -1;
    }
    t->pa = (const uint16_t *)t->a.view.buf;
    t->na = (uint64_t)t->a.view.len / 2;
    t->pb = (const uint16_t *)t->b.view.buf;
    t->nb = (uint64_t)t->b.view.len / 2;
    if (t->mode >= TX_TUPLE_RANDOM && t->na != t->nb) {
        PyMem_RawFree(tpl);
        PyErr_SetString(PyExc_ValueError, "tuple arrays a and b differ in length");
        return -1;
    }
    double lim;
    if (get_ll(d, "start", 0, &v) < 0) goto fail;
    t->start = (uint64_t)v;
    if (get_ll(d, "count", 0, &v) < 0) goto fail;
    t->count = (uint64_t)v;
    if (get_dbl(d, "rate", 0.0, &t->rate) < 0) goto fail;
    if (get_dbl(d, "time_limit", 0.0, &lim) < 0) goto fail;
    t->time_limit_ns = (uint64_t)(lim * 1e9);
    if (get_dbl(d, "catchup", 0.0, &t->catchup) < 0) goto fail;
    t->cu_tokens = (double)BATCH;
    t->cu_ns = 0;
    t->behind_ns = 0;
    t->step_ns = 0;
    if (get_ll(d, "flags", 0, &v) < 0) goto fail;
    t->flags = (uint16_t)v;
    if (get_ll(d, "tag_every", 0, &v) < 0) goto fail;
    t->tag_every = (uint64_t)v;
    if (get_ll(d, "tag_start", 0, &v) < 0) goto fail;
    t->tag_start = (uint64_t)v;
    if (get_ll(d, "tag_count", 0, &v) < 0) goto fail;
    t->tag_count = (uint64_t)v;
    if (get_ll(d, "stamp_each", 0, &v) < 0) goto fail;
    t->stamp_each = v != 0;
    {
        PyObject *so = PyDict_GetItemString(d, "seed");
        t->rng = (so && so != Py_None) ? (uint64_t)PyLong_AsUnsignedLongLongMask(so) : 0;
        if (PyErr_Occurred()) goto fail;
    }
    if (t->mode == TX_ENUM && t->start + t->count > t->na * t->nb) {
        PyErr_SetString(PyExc_ValueError, "enumeration range beyond |S|*|D|");
        goto fail;
    }
    if (get_perm(d, &t->perm, t->na * t->nb) < 0) goto fail;
    t->frames = (uint8_t *)PyMem_RawMalloc(len * BATCH);
    if (!t->frames) {
        PyErr_NoMemory();
        goto fail;
    }
    for (int i = 0; i < BATCH; i++) {
        memcpy(t->frames + (size_t)i * len, tpl, len);
        t->iov[i].iov_base = t->frames + (size_t)i * len;
        t->iov[i].iov_len = len;
        memset(&t->msgs[i], 0, sizeof(t->msgs[i]));
        t->msgs[i].msg_hdr.msg_iov = &t->iov[i];
        t->msgs[i].msg_hdr.msg_iovlen = 1;
    }
    PyMem_RawFree(tpl);
    return 0;
fail:
    PyMem_RawFree(tpl);
    return -1;
}

static int rx_init(rx_t *r, PyObject *d) {
    long long v;
    memset(r, 0, offsetof(rx_t, bufs));
    if (!PyDict_Check(d)) {
        PyErr_SetString(PyExc_TypeError, "rx port must be a dict");
        return -1;
    }
    if (get_ll(d, "fd", -1, &v) < 0) return -1;
    r->fd = (int)v;
    if (get_ll(d, "watch_slot", -1, &r->watch_slot) < 0) return -1;
    if (get_ll(d, "mode", RX_ANY, &v) < 0) return -1;
    r->mode = (int)v;
    if (get_ll(d, "reverse", 0, &v) < 0) return -1;
    r->reverse = (int)v;
    if (get_ll(d, "expect", 0, &v) < 0) return -1;
    r->expect = (uint64_t)v;
    if (get_ll(d, "nsrc", 1, &v) < 0) return -1;
    r->nsrc = v > 0 ? (uint64_t)v : 1;
    if (get_ll(d, "want_src4", 0, &v) < 0) return -1;
    r->want_src4 = (uint32_t)v;
    if (get_buf(d, "dst", &r->dst, 0, 2) < 0 || get_buf(d, "learned", &r->learned, 1, 2) < 0 ||
        get_buf(d, "tuple_sport", &r->tsport, 0, 2) < 0 || get_buf(d, "tuple_expect", &r->texpect, 0, 2) < 0 ||
        get_buf(d, "latency", &r->lat, 1, 8) < 0 || get_buf(d, "delay_hist", &r->hist, 1, 8) < 0)
        return -1;
    if (r->hist.held) {
        if ((uint64_t)r->hist.view.len != (uint64_t)HIST_SIZE * 8) {
            PyErr_SetString(PyExc_ValueError, "delay_hist must hold HIST_SIZE uint64 counters");
            return -1;
        }
        r->phist = (uint64_t *)r->hist.view.buf;
    }
    r->d_min = INT64_MAX;
    r->d_max = INT64_MIN;
    if (r->dst.held) {
        r->pdst = (const uint16_t *)r->dst.view.buf;
        r->ndst = (uint64_t)r->dst.view.len / 2;
    }
    if (r->learned.held) {
        r->plearned = (uint16_t *)r->learned.view.buf;
        r->nlearned = (uint64_t)r->learned.view.len / 2;
    }
    if (r->tsport.held) {
        r->ptsport = (const uint16_t *)r->tsport.view.buf;
        r->ntuple = (uint64_t)r->tsport.view.len / 2;
    }
    if (r->texpect.held) {
        r->ptexpect = (const uint16_t *)r->texpect.view.buf;
        if ((uint64_t)r->texpect.view.len / 2 != r->ntuple) {
            PyErr_SetString(PyExc_ValueError, "tuple_expect and tuple_sport differ in length");
            return -1;
        }
    }
    if (r->lat.held) {
        r->plat = (int64_t *)r->lat.view.buf;
        r->lat_cap = (uint64_t)r->lat.view.len / 8;
    }
    if ((r->mode == RX_ENUM_CHECK || r->mode == RX_LEARN) && !r->pdst) {
        PyErr_SetString(PyExc_ValueError, "enumeration check needs the dst array");
        return -1;
    }
    if (get_perm(d, &r->perm, r->nsrc * r->ndst) < 0) return -1;
    if (r->mode == RX_LEARN && !r->plearned) {
        PyErr_SetString(PyExc_ValueError, "learning needs a writable learned array");
        return -1;
    }
    if (r->mode == RX_TUPLE_CHECK && !r->ptsport) {
        PyErr_SetString(PyExc_ValueError, "tuple check needs tuple_sport");
        return -1;
    }
    for (int i = 0; i < BATCH; i++) {
        r->iov[i].iov_base = r->bufs[i];
        r->iov[i].iov_len = SNAP;
        memset(&r->msgs[i], 0, sizeof(r->msgs[i]));
        r->msgs[i].msg_hdr.msg_iov = &r->iov[i];
        r->msgs[i].msg_hdr.msg_iovlen = 1;
    }
    return 0;
}

/* Build and send the frames that are due; returns the number sent. */
static int tx_step(tx_t *t, uint64_t now, uint64_t t0) {
    if (t->done) return 0;
    uint64_t due;
    if (t->rate <= 0.0) {
        due = t->count;
    } else {
        double d = (double)(now - t0) * 1e-9 * t->rate + 1.0;
        due = d >= (double)t->count ? t->count : (uint64_t)d;
    }
    if (t->time_limit_ns && now - t0 >= t->time_limit_ns) {
        t->done = 1;
        return 0;
    }
    if (due <= t->sent) {
        t->step_ns = now;
        return 0;
    }
    uint64_t lag = due - t->sent;
    if (lag > t->max_lag) t->max_lag = lag;
    if (lag > BATCH && t->step_ns) t->behind_ns += now - t->step_ns;
    t->step_ns = now;
    int n = lag > BATCH ? BATCH : (int)lag;
    if (t->catchup > 0.0 && t->rate > 0.0) {
        /* A backlog (the sender fell behind: a stall, a preemption) is caught up at most at catchup x the rate:
         * a token bucket refilled at that rate, one batch deep. On schedule it never binds (the bucket fills
         * faster than frames fall due); after a stall it spreads the catch-up instead of sending the whole
         * backlog at line rate into the DUT. */
        if (t->cu_ns == 0) t->cu_ns = now;
        t->cu_tokens += (double)(now - t->cu_ns) * 1e-9 * t->rate * t->catchup;
        t->cu_ns = now;
        if (t->cu_tokens > (double)BATCH) t->cu_tokens = (double)BATCH;
        if (t->cu_tokens < 1.0) return 0;
        if ((double)n > t->cu_tokens) n = (int)t->cu_tokens;
    }
    /* The send stamp: one clock reading per batch for plain frames (their stamp is never read). A frame whose
     * delay is measured gets its own reading as it is built: a tagged frame is sent alone (it ends any batch
     * before it and its own), so only its build and the send call lie between stamp and wire; with stamp_each
     * (PDV over every frame) each frame of a batch is stamped as it is built, so frame i no longer carries the
     * build time of the frames before it (what remains is the send call, which puts frames on the wire in order). */
    uint64_t stamp = now_ns(CLOCK_REALTIME);
    const layout_t *lo = &t->lo;
    int built = 0;
    for (int i = 0; i < n; i++) {
        uint64_t k = t->next_i + (uint64_t)i;
        uint16_t flags = t->flags;
        int tagged = 0;
        if (t->tag_every && k >= t->tag_start && (k - t->tag_start) % t->tag_every == 0 &&
            (!t->tag_count || (k - t->tag_start) / t->tag_every < t->tag_count)) {
            if (i > 0) break; /* a tagged frame opens its batch: stamped just now, right before it is built */
            flags |= FLAG_TAGGED;
            tagged = 1;
        }
        if (i > 0 && t->stamp_each) stamp = now_ns(CLOCK_REALTIME);
        uint16_t sp, dp;
        uint32_t seq;
        switch (t->mode) {
        case TX_ENUM: {
            uint64_t idx = t->start + k, j = perm_apply(&t->perm, idx);
            sp = t->pa[j % t->na];
            dp = t->pb[j / t->na];
            seq = (uint32_t)idx;
            break;
        }
        case TX_RANDOM:
            sp = t->pa[splitmix_below(&t->rng, t->na)];
            dp = t->pb[splitmix_below(&t->rng, t->nb)];
            seq = (uint32_t)k;
            break;
        case TX_TUPLE_RANDOM: {
            uint64_t j = splitmix_below(&t->rng, t->na);
            sp = t->pa[j];
            dp = t->pb[j];
            seq = (uint32_t)j;
            break;
        }
        case TX_TUPLE_LINEAR: {
            uint64_t j = k % t->na;
            sp = t->pa[j];
            dp = t->pb[j];
            seq = (uint32_t)j;
            break;
        }
        default:
            sp = t->pa[0];
            dp = t->pb[0];
            seq = 0;
        }
        frame_fill(lo, t->frames + (size_t)i * lo->len, sp, dp, seq, stamp, flags);
        built++;
        if (tagged) break; /* ... and is sent alone, right after it was built */
    }
    int r = sendmmsg(t->fd, t->msgs, (unsigned)built, MSG_DONTWAIT);
    t->calls++;
    if (r < 0) {
        t->errors++;
        return 0;
    }
    if (r < built) t->errors++;
    /* frames not accepted are rebuilt next time with the same k (same ports for ENUM/LINEAR) */
    if (t->sent == 0 && r > 0) t->first_ns = now;
    t->cu_tokens -= (double)r;
    t->sent += (uint64_t)r;
    t->next_i += (uint64_t)r;
    if (r > 0) t->last_ns = now_ns(CLOCK_MONOTONIC);
    if (t->sent >= t->count) t->done = 1;
    return r;
}

static inline void rx_frame(rx_t *r, const uint8_t *f, size_t len, uint16_t tag, const struct msghdr *mh) {
    r->received++;
    if (len < 14 + 20 + 8 + 18) return;
    uint16_t et = rd16(f + 12);
    size_t l4;
    uint32_t src4 = 0;
    if (et == 0x0800) {
        if (f[14 + 9] != 17) return;
        l4 = 14 + (size_t)(f[14] & 0x0F) * 4;
        src4 = rd32(f + 14 + 12);
    } else if (et == 0x86DD) {
        if (f[14 + 6] != 17) return;
        l4 = 14 + 40;
    } else {
        return;
    }
    if (len < l4 + 8 + 18) return;
    const uint8_t *p = f + l4 + 8;
    if (rd16(p) != MAGIC || rd16(p + 2) != tag) return;
    uint16_t flags = rd16(p + 16);
    if (((flags & FLAG_REVERSE) != 0) != (r->reverse != 0)) return;
    uint16_t sport = rd16(f + l4), dport = rd16(f + l4 + 2);
    uint32_t seq = rd32(p + 4);
    switch (r->mode) {
    case RX_ENUM_CHECK:
    case RX_LEARN: {
        if ((uint64_t)seq >= r->perm.n) { /* outside [0, N): no pair (and no cycle to walk) */
            r->bad++;
            return;
        }
        uint64_t di = perm_apply(&r->perm, seq) / r->nsrc;
        if (di >= r->ndst || r->pdst[di] != dport) {
            r->bad++;
            return;
        }
        if (r->mode == RX_LEARN) {
            if ((uint64_t)seq >= r->nlearned) {
                r->bad++;
                return;
            }
            if (r->want_src4 && src4 != r->want_src4) r->foreign++;
            if (r->plearned[seq] == 0) {
                r->plearned[seq] = sport;
                r->learned_new++;
            } else {
                r->dup++;
            }
        }
        break;
    }
    case RX_TUPLE_CHECK:
        if ((uint64_t)seq >= r->ntuple || r->ptsport[seq] != sport || (r->ptexpect && r->ptexpect[seq] != dport)) {
            r->bad++;
            return;
        }
        break;
    default:
        break;
    }
    r->valid++;
    int tagged = (flags & FLAG_TAGGED) != 0;
    if (tagged || r->phist) {
        uint64_t tx = rd64(p + 8);
        uint64_t rxt = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR((struct msghdr *)mh, c)) {
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
                struct timespec ts;
                memcpy(&ts, CMSG_DATA(c), sizeof(ts));
                rxt = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
            }
        }
        if (!rxt) rxt = now_ns(CLOCK_REALTIME);
        int64_t delay = (int64_t)(rxt - tx);
        if (tagged) {
            if (r->lat_n < r->lat_cap)
                r->plat[r->lat_n++] = delay;
            else
                r->lat_over++;
        }
        if (r->phist) {
            if (delay < r->d_min) r->d_min = delay;
            if (delay > r->d_max) r->d_max = delay;
            if (delay < 0) r->d_neg++;
            r->phist[hist_index(delay < 0 ? 0 : (uint64_t)delay)]++;
            r->d_n++;
        }
    }
}

static int rx_step(rx_t *r, uint16_t tag) {
    for (int i = 0; i < BATCH; i++) {
        int stamped = r->plat || r->phist;
        r->msgs[i].msg_hdr.msg_control = stamped ? r->ctl[i] : NULL;
        r->msgs[i].msg_hdr.msg_controllen = stamped ? sizeof(r->ctl[i]) : 0;
    }
    int n = recvmmsg(r->fd, r->msgs, BATCH, MSG_DONTWAIT, NULL);
    if (n <= 0) return 0;
    for (int i = 0; i < n; i++) rx_frame(r, r->bufs[i], r->msgs[i].msg_len, tag, &r->msgs[i].msg_hdr);
    return n;
}

/* A writable, 8-byte aligned block of at least min_words uint64 shared with other threads (*out NULL when o is
 * None); -1 with an exception set when o is no such buffer. */
static int get_u64_block(PyObject *o, Py_buffer *v, Py_ssize_t min_words, const char *what, uint64_t **out) {
    *out = NULL;
    if (o == NULL || o == Py_None) return 0;
    if (PyObject_GetBuffer(o, v, PyBUF_WRITABLE) < 0) return -1;
    if (v->len < 8 * min_words || ((uintptr_t)v->buf % 8) != 0) {
        PyBuffer_Release(v);
        PyErr_Format(PyExc_ValueError, "%s must be a writable, aligned buffer of at least %zd uint64", what, min_words);
        return -1;
    }
    *out = (uint64_t *)v->buf;
    return 0;
}

static PyObject *engine_run(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"tx", "rx", "timeout", "tag", "quantum", "sync", "watch", NULL};
    PyObject *txl, *rxl, *synco = NULL, *watcho = NULL;
    double timeout, quantum = 50e-6;
    int tag;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!O!di|dOO", kwlist, &PyList_Type, &txl, &PyList_Type, &rxl, &timeout,
                                     &tag, &quantum, &synco, &watcho))
        return NULL;
    /* watch[0]: set (by a monitor on another thread) to end every stream of the trial now; the other slots: the
     * frames each tx stream sent and each rx port counted valid so far, published as the trial runs.
     * sync[0]: lanes with senders still sending; sync[1]: CLOCK_MONOTONIC ns when the last one finished */
    Py_buffer watchv, syncv;
    uint64_t *watch = NULL, *sync = NULL;
    if (get_u64_block(watcho, &watchv, 1, "watch", &watch) < 0) return NULL;
    Py_ssize_t nwatch = watch ? watchv.len / 8 : 0;
    if (get_u64_block(synco, &syncv, 2, "sync", &sync) < 0) {
        if (watch) PyBuffer_Release(&watchv);
        return NULL;
    }
    uint64_t quantum_ns = quantum > 0 ? (uint64_t)(quantum * 1e9) : 0;
    Py_ssize_t ntx = PyList_GET_SIZE(txl), nrx = PyList_GET_SIZE(rxl);
    if (ntx > MAX_TX || nrx > MAX_RX) {
        if (sync) PyBuffer_Release(&syncv);
        if (watch) PyBuffer_Release(&watchv);
        PyErr_SetString(PyExc_ValueError, "at most 2 tx streams and 2 rx ports");
        return NULL;
    }
    tx_t *tx = (tx_t *)PyMem_RawCalloc(MAX_TX, sizeof(tx_t));
    rx_t *rx = (rx_t *)PyMem_RawCalloc(MAX_RX, sizeof(rx_t));
    PyObject *result = NULL;
    Py_ssize_t i, ti = 0, ri = 0;
    int reported = 0; /* this lane's end was published in sync */
    if (!tx || !rx) {
        PyErr_NoMemory();
        goto out;
    }
    for (ti = 0; ti < ntx; ti++)
        if (tx_init(&tx[ti], PyList_GET_ITEM(txl, ti), (uint16_t)tag) < 0) {
            ti++;
            goto out;
        }
    for (ri = 0; ri < nrx; ri++)
        if (rx_init(&rx[ri], PyList_GET_ITEM(rxl, ri)) < 0) {
            ri++;
            goto out;
        }
    for (i = 0; i < ntx; i++)
        if (tx[i].watch_slot >= nwatch || (tx[i].watch_slot == 0) || (!watch && tx[i].watch_slot >= 0)) {
            PyErr_SetString(PyExc_ValueError, "tx watch_slot outside the watch block (slot 0 is the stop flag)");
            goto out;
        }
    for (i = 0; i < nrx; i++)
        if (rx[i].watch_slot >= nwatch || (rx[i].watch_slot == 0) || (!watch && rx[i].watch_slot >= 0)) {
            PyErr_SetString(PyExc_ValueError, "rx watch_slot outside the watch block (slot 0 is the stop flag)");
            goto out;
        }

    uint64_t t0, tend = 0, tstop;
    uint64_t timeout_ns = (uint64_t)(timeout * 1e9);
    Py_BEGIN_ALLOW_THREADS;
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    struct pollfd pfd[MAX_RX];
    for (i = 0; i < nrx; i++) {
        pfd[i].fd = rx[i].fd;
        pfd[i].events = POLLIN;
    }
    t0 = now_ns(CLOCK_MONOTONIC);
    int stop_seen = 0;
    for (;;) {
        uint64_t now = now_ns(CLOCK_MONOTONIC);
        int rx_work = 0, all_done = 1;
        if (watch && !stop_seen && __atomic_load_n(&watch[0], __ATOMIC_ACQUIRE)) {
            /* the trial has failed already (the monitor's judgement): each stream ends with the frames due by now
             * (a backlog still goes out, paced as ever), so the trial is exactly the full one's first part; the
             * receive wait follows */
            stop_seen = 1;
            for (i = 0; i < ntx; i++) {
                tx_t *t = &tx[i];
                if (t->done || t->rate <= 0.0) continue;
                double d = (double)(now - t0) * 1e-9 * t->rate + 1.0;
                uint64_t due = d >= (double)t->count ? t->count : (uint64_t)d;
                if (due < t->count) {
                    t->count = due > t->sent ? due : t->sent;
                    t->stopped = 1;
                    if (t->sent >= t->count) t->done = 1;
                }
            }
        }
        for (i = 0; i < ntx; i++) {
            tx_step(&tx[i], now, t0);
            if (!tx[i].done) all_done = 0;
            if (tx[i].watch_slot > 0) __atomic_store_n(&watch[tx[i].watch_slot], tx[i].sent, __ATOMIC_RELAXED);
        }
        for (i = 0; i < nrx; i++) {
            for (int k = 0; k < 16; k++) { /* drain, bounded so sending is not starved */
                int n = rx_step(&rx[i], (uint16_t)tag);
                rx_work += n;
                if (n < BATCH) break;
            }
            if (rx[i].watch_slot > 0) __atomic_store_n(&watch[rx[i].watch_slot], rx[i].valid, __ATOMIC_RELAXED);
        }
        now = now_ns(CLOCK_MONOTONIC);
        if (all_done) {
            if (!tend) tend = now;
            if (sync) {
                if (!reported && ntx) { /* this lane's senders are done: publish the end, count down */
                    uint64_t cur = __atomic_load_n(&sync[1], __ATOMIC_ACQUIRE);
                    while (cur < tend && !__atomic_compare_exchange_n(&sync[1], &cur, tend, 0, __ATOMIC_ACQ_REL,
                                                                      __ATOMIC_ACQUIRE))
                        ;
                    __atomic_fetch_sub(&sync[0], 1, __ATOMIC_ACQ_REL);
                }
                reported = 1;
                if ((int64_t)__atomic_load_n(&sync[0], __ATOMIC_ACQUIRE) > 0) {
                    /* another lane is still sending: keep receiving, the wait starts when it ends */
                    if (rx_work) continue;
                    struct timespec ts = {0, 200000};
                    if (nrx)
                        ppoll(pfd, (nfds_t)nrx, &ts, NULL);
                    else
                        clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
                    continue;
                }
                uint64_t last = __atomic_load_n(&sync[1], __ATOMIC_ACQUIRE);
                if (last > tend) tend = last; /* the receive wait starts when the last sender of the trial ended */
            }
            int complete = 1;
            for (i = 0; i < nrx; i++)
                if (rx[i].valid < rx[i].expect) complete = 0;
            if (complete && !rx_work) break;
            if (now - tend >= timeout_ns) break;
            if (rx_work) continue;
            uint64_t left = tend + timeout_ns - now;
            if (left > 10000000ull) left = 10000000ull;
            struct timespec ts = {(time_t)(left / 1000000000ull), (long)(left % 1000000000ull)};
            ppoll(pfd, (nfds_t)nrx, &ts, NULL);
            continue;
        }
        /* pacing: sleep until the next frame is due, but at least one quantum, so that the
           kernel's receive work (softirq) and the DUT get the CPU between rounds; never while behind */
        uint64_t wake = UINT64_MAX, tail = UINT64_MAX;
        int behind = 0;
        for (i = 0; i < ntx; i++) {
            if (tx[i].done) continue;
            if (tx[i].rate <= 0.0) {
                behind = 1;
                break;
            }
            double next_at = (double)t0 + ((double)tx[i].sent) / tx[i].rate * 1e9;
            double last_at = (double)t0 + ((double)tx[i].count - 1.0) / tx[i].rate * 1e9;
            if (next_at <= (double)now) {
                behind = 1;
                break;
            }
            if ((uint64_t)next_at < wake) wake = (uint64_t)next_at;
            if ((uint64_t)last_at < tail) tail = (uint64_t)last_at;
        }
        if (behind) continue;
        if (tail < now + quantum_ns + SPIN_NS) continue; /* the last frames: spin, so the trial ends on time */
        if (wake < now + quantum_ns) wake = now + quantum_ns;
        if (wake > tail - SPIN_NS) wake = tail - SPIN_NS;
        if (wake <= now + SPIN_NS) continue;
        wake -= SPIN_NS / 2; /* wake a little early: timer wake-up latency */
        struct timespec ts = {(time_t)(wake / 1000000000ull), (long)(wake % 1000000000ull)};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    }
    tstop = now_ns(CLOCK_MONOTONIC);
    Py_END_ALLOW_THREADS;

    {
        PyObject *txo = PyList_New(ntx), *rxo = PyList_New(nrx);
        for (i = 0; i < ntx; i++) {
            tx_t *t = &tx[i];
            PyList_SET_ITEM(txo, i,
                            Py_BuildValue("{s:K,s:K,s:d,s:d,s:K,s:K,s:K,s:d,s:i}", "sent", (unsigned long long)t->sent,
                                          "count", (unsigned long long)t->count, "first",
                                          (double)(t->first_ns - t0) * 1e-9, "last",
                                          t->last_ns ? (double)(t->last_ns - t0) * 1e-9 : 0.0, "errors",
                                          (unsigned long long)t->errors, "calls", (unsigned long long)t->calls,
                                          "max_lag", (unsigned long long)t->max_lag, "behind",
                                          (double)t->behind_ns * 1e-9, "stopped", t->stopped));
        }
        for (i = 0; i < nrx; i++) {
            rx_t *r = &rx[i];
            struct tpacket_stats st = {0, 0};
            socklen_t sl = sizeof(st);
            getsockopt(r->fd, SOL_PACKET, PACKET_STATISTICS, &st, &sl);
            PyList_SET_ITEM(rxo, i,
                            Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:I,s:K,s:K,s:L,s:L}", "received",
                                          (unsigned long long)r->received, "valid", (unsigned long long)r->valid, "bad",
                                          (unsigned long long)r->bad, "dup", (unsigned long long)r->dup, "learned",
                                          (unsigned long long)r->learned_new, "latency_samples",
                                          (unsigned long long)r->lat_n, "latency_overflow",
                                          (unsigned long long)r->lat_over, "foreign_source",
                                          (unsigned long long)r->foreign, "socket_drops", st.tp_drops, "delay_frames",
                                          (unsigned long long)r->d_n, "delay_negative", (unsigned long long)r->d_neg,
                                          "delay_min", (long long)(r->d_n ? r->d_min : 0), "delay_max",
                                          (long long)(r->d_n ? r->d_max : 0)));
        }
        result = Py_BuildValue("{s:N,s:N,s:d,s:d}", "tx", txo, "rx", rxo, "elapsed", (double)(tstop - t0) * 1e-9,
                               "send_end", tend ? (double)(tend - t0) * 1e-9 : 0.0);
    }
out:
    if (sync) {
        if (!reported && ntx) __atomic_fetch_sub(&sync[0], 1, __ATOMIC_ACQ_REL); /* failed: do not hold the others */
        PyBuffer_Release(&syncv);
    }
    if (watch) PyBuffer_Release(&watchv);
    for (i = 0; i < ti; i++) tx_free(&tx[i]);
    for (i = 0; i < ri; i++) rx_free(&rx[i]);
    PyMem_RawFree(tx);
    PyMem_RawFree(rx);
    return result;
}

/* Open an AF_PACKET socket bound to ifname, created inside the network namespace at netns_path. */
static PyObject *engine_open_port(PyObject *self, PyObject *args) {
    const char *ifname, *nspath = NULL;
    int rcvbuf = 64 << 20, sndbuf = 4 << 20;
    if (!PyArg_ParseTuple(args, "s|zii", &ifname, &nspath, &rcvbuf, &sndbuf)) return NULL;
    int orig = -1, target = -1, fd = -1, err = 0;
    const char *what = "";
    if (nspath && *nspath) {
        orig = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
        target = open(nspath, O_RDONLY | O_CLOEXEC);
        if (orig < 0 || target < 0) {
            err = errno;
            what = "open netns";
            goto done;
        }
        if (setns(target, CLONE_NEWNET) < 0) {
            err = errno;
            what = "setns";
            goto done;
        }
    }
    fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
    if (fd < 0) {
        err = errno;
        what = "socket(AF_PACKET)";
        goto back;
    }
    unsigned idx = if_nametoindex(ifname);
    if (!idx) {
        err = errno;
        what = "if_nametoindex";
        goto back;
    }
    int one = 1;
    setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
    setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one));
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) < 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)) < 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
    struct sockaddr_ll sll;
    memset(&sll, 0, sizeof(sll));
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(ETH_P_ALL);
    sll.sll_ifindex = (int)idx;
    if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
        err = errno;
        what = "bind";
    }
back:
    if (orig >= 0 && setns(orig, CLONE_NEWNET) < 0 && !err) {
        err = errno;
        what = "setns back";
    }
done:
    if (orig >= 0) close(orig);
    if (target >= 0) close(target);
    if (err) {
        if (fd >= 0) close(fd);
        errno = err;
        PyErr_Format(PyExc_OSError, "%s (%s, interface %s, netns %s): %s", what, "AF_PACKET", ifname,
                     nspath ? nspath : "-", strerror(err));
        return NULL;
    }
    return PyLong_FromLong(fd);
}

/* Discard everything queued on a socket and reset its drop statistics; returns frames discarded. */
static PyObject *engine_drain(PyObject *self, PyObject *args) {
    int fd;
    if (!PyArg_ParseTuple(args, "i", &fd)) return NULL;
    char buf[64];
    long n = 0;
    Py_BEGIN_ALLOW_THREADS;
    while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC) >= 0) n++;
    struct tpacket_stats st;
    socklen_t sl = sizeof(st);
    getsockopt(fd, SOL_PACKET, PACKET_STATISTICS, &st, &sl);
    Py_END_ALLOW_THREADS;
    return PyLong_FromLong(n);
}

/* Enable or disable kernel receive timestamps (SO_TIMESTAMPNS) on a socket. */
static PyObject *engine_timestamps(PyObject *self, PyObject *args) {
    int fd, on;
    if (!PyArg_ParseTuple(args, "ip", &fd, &on)) return NULL;
    if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof(on)) < 0) return PyErr_SetFromErrno(PyExc_OSError);
    Py_RETURN_NONE;
}

/* Test hook: build one frame from a template exactly as the data path does. */
static PyObject *engine_build(PyObject *self, PyObject *args) {
    Py_buffer tplv;
    int ipv6, sport, dport, tag, flags;
    unsigned long seq;
    unsigned long long stamp;
    if (!PyArg_ParseTuple(args, "y*piiikKi", &tplv, &ipv6, &sport, &dport, &tag, &seq, &stamp, &flags)) return NULL;
    size_t len = (size_t)tplv.len;
    size_t l4 = 14 + (ipv6 ? 40 : 20);
    if (len < l4 + 26) {
        PyBuffer_Release(&tplv);
        PyErr_SetString(PyExc_ValueError, "template too short");
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize((const char *)tplv.buf, (Py_ssize_t)len);
    PyBuffer_Release(&tplv);
    if (!out) return NULL;
    uint8_t *f = (uint8_t *)PyBytes_AS_STRING(out);
    memset(f + l4, 0, 4);
    memset(f + l4 + 6, 0, 2);
    wr16(f + l4 + 8, MAGIC);
    wr16(f + l4 + 10, (uint16_t)tag);
    memset(f + l4 + 12, 0, 14);
    layout_t lo;
    layout_init(&lo, f, len, ipv6);
    frame_fill(&lo, f, (uint16_t)sport, (uint16_t)dport, (uint32_t)seq, (uint64_t)stamp, (uint16_t)flags);
    return out;
}

/* Test hook: the delay-histogram bucket of a delay in ns (the Python decoder must agree). */
static PyObject *engine_hist_index(PyObject *self, PyObject *args) {
    unsigned long long v;
    if (!PyArg_ParseTuple(args, "K", &v)) return NULL;
    return PyLong_FromUnsignedLongLong(hist_index(v));
}

/* Test hook: the first n SplitMix64 below(bound) draws, to check agreement with the Python generator. */
static PyObject *engine_draws(PyObject *self, PyObject *args) {
    unsigned long long seed, bound;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "KKn", &seed, &bound, &n)) return NULL;
    if (bound == 0) {
        PyErr_SetString(PyExc_ValueError, "bound must be positive");
        return NULL;
    }
    PyObject *l = PyList_New(n);
    uint64_t st = seed;
    for (Py_ssize_t i = 0; i < n; i++) PyList_SET_ITEM(l, i, PyLong_FromUnsignedLongLong(splitmix_below(&st, bound)));
    return l;
}

/* Test and bench hook: out[i] = pi(start + i) of the phase-1 order, exactly as the data path computes it. */
static PyObject *engine_permute(PyObject *self, PyObject *args) {
    int order;
    unsigned long long n, seed, start = 0;
    Py_buffer outv;
    if (!PyArg_ParseTuple(args, "iKKw*|K", &order, &n, &seed, &outv, &start)) return NULL;
    if (outv.len % 4 || ((uintptr_t)outv.buf % 4) != 0 || n == 0 || n > (1ull << 32) ||
        (order != ORDER_PRODUCT && order != ORDER_FEISTEL)) {
        PyBuffer_Release(&outv);
        PyErr_SetString(PyExc_ValueError, "permute(order, n, seed, out, start): 0 < n <= 2**32, out: aligned uint32");
        return NULL;
    }
    uint64_t count = (uint64_t)outv.len / 4;
    if (start + count > n) {
        PyBuffer_Release(&outv);
        PyErr_SetString(PyExc_ValueError, "indices beyond n");
        return NULL;
    }
    perm_t p;
    perm_init(&p, n, order, seed);
    uint32_t *out = (uint32_t *)outv.buf;
    Py_BEGIN_ALLOW_THREADS;
    for (uint64_t i = 0; i < count; i++) out[i] = (uint32_t)perm_apply(&p, start + i);
    Py_END_ALLOW_THREADS;
    PyBuffer_Release(&outv);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"run", (PyCFunction)(void (*)(void))engine_run, METH_VARARGS | METH_KEYWORDS,
     "run(tx, rx, timeout, tag, quantum=50e-6, sync=None, watch=None) -> dict: send the tx streams paced, count the rx ports; sync: two uint64 shared by the lanes of one trial; watch: uint64 block, [0] a stop flag, the streams' and ports' watch_slot their counts so far."},
    {"open_port", engine_open_port, METH_VARARGS,
     "open_port(ifname, netns_path=None, rcvbuf=64MiB, sndbuf=4MiB) -> fd of a bound AF_PACKET socket."},
    {"drain", engine_drain, METH_VARARGS, "drain(fd) -> frames discarded; also resets drop statistics."},
    {"timestamps", engine_timestamps, METH_VARARGS, "timestamps(fd, on): kernel receive timestamps."},
    {"build", engine_build, METH_VARARGS, "build(template, ipv6, sport, dport, tag, seq, stamp, flags) -> frame."},
    {"draws", engine_draws, METH_VARARGS, "draws(seed, bound, n) -> SplitMix64 below() draws."},
    {"hist_index", engine_hist_index, METH_VARARGS, "hist_index(ns) -> delay-histogram bucket of ns."},
    {"permute", engine_permute, METH_VARARGS,
     "permute(order, n, perm_seed, out, start=0): out[i] = phase-1 pair index of frame start + i (uint32)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_engine",
                                    "natbench software tester data path (AF_PACKET, batched).", -1, methods};

PyMODINIT_FUNC PyInit__engine(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    PyModule_AddIntConstant(m, "BATCH", BATCH);
    PyModule_AddIntConstant(m, "HIST_BITS", HIST_BITS);
    PyModule_AddIntConstant(m, "HIST_SIZE", HIST_SIZE);
    PyModule_AddIntConstant(m, "TX_ENUM", TX_ENUM);
    PyModule_AddIntConstant(m, "TX_RANDOM", TX_RANDOM);
    PyModule_AddIntConstant(m, "TX_TUPLE_RANDOM", TX_TUPLE_RANDOM);
    PyModule_AddIntConstant(m, "TX_TUPLE_LINEAR", TX_TUPLE_LINEAR);
    PyModule_AddIntConstant(m, "TX_TUPLE_FIXED", TX_TUPLE_FIXED);
    PyModule_AddIntConstant(m, "RX_ANY", RX_ANY);
    PyModule_AddIntConstant(m, "RX_ENUM_CHECK", RX_ENUM_CHECK);
    PyModule_AddIntConstant(m, "RX_LEARN", RX_LEARN);
    PyModule_AddIntConstant(m, "RX_TUPLE_CHECK", RX_TUPLE_CHECK);
    PyModule_AddIntConstant(m, "ORDER_PRODUCT", ORDER_PRODUCT);
    PyModule_AddIntConstant(m, "ORDER_FEISTEL", ORDER_FEISTEL);
    return m;
}
