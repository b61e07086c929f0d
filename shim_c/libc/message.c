/* Message stamps: a thread woken by data on a descriptor resumes at the virtual time the data was written,
 * not at the run's highest time.
 *
 * Why: a poll/epoll/select that returns events used to resume its thread at the highest time any thread of
 * the run had reached (TW_WAKE_ANY), since the event might come from any process. vLLM's API server polls
 * its clients' sockets and the engine's replies in one event loop: every wake-up dragged it to the engine's
 * clock, which runs ahead by whole GPU steps, and a burst of requests reached the engine spread over
 * hundreds of milliseconds (docs/LIMITATIONS.md, case 3).
 *
 * How:
 * - each descriptor is keyed once (per process, cached by descriptor number until close, dup2, dup3,
 *   close_range or syscall(SYS_close), and re-checked by inode at wake-ups) as two channel keys, one per
 *   direction: a pipe or FIFO by its inode; a connected Unix socket by its own and
 *   its peer's inode (the peer's from the kernel's sock_diag); a connected TCP/UDP socket by its local and
 *   peer addresses; an eventfd by this process and its number. Anything else is not tracked.
 * - a listening socket is keyed by its port (or Unix path), and connect() stamps that key: an accept
 *   resumes at the time the connection was made.
 * - write, writev, send, sendto, sendmsg and sendmmsg stamp the writing direction's key with the writer's
 *   virtual time (in the run's shared clock file: tw_tk_msg_stamp) before the data can be seen; shutdown
 *   stamps it too (the reader sees end of file).
 * - a wait that returns readable descriptors resumes at the latest stamp among them (TW_WAKE_AT). When one
 *   of them is not tracked, or has no stamp (written before the run, or by a call not interposed here), the
 *   wait falls back to the run's highest time, as before (TIMEWARP_MSG_LOG=1 names those wake-ups). Descriptors that are only writable resume at this process's own time. A non-blocking check
 *   (zero timeout) that finds stamped data moves the thread to the stamp too.
 * - epoll reports its user data, not descriptors: epoll_ctl (and syscall(SYS_epoll_ctl)) is interposed to
 *   map (epoll fd, data) back to the descriptor; data never seen that names an open descriptor is taken as
 *   one (libuv, in uvloop, registers where no interposer sees it, with the descriptor as its data). With the
 *   first look (vclock.c; TIMEWARP_WAIT_FIRST_LOOK=0 turns it off) the thread that registers a descriptor for
 *   input is taken as its reader (for the holds below).
 * - a message on a socket or eventfd that its reader has not seen yet holds the keeper's clock at its stamp
 *   (tw_tk_msg_hold) for at most TIMEWARP_MSG_HOLD_US of real time: the reader, woken by the kernel a few
 *   microseconds later, will act at that virtual time, and the clock must not jump past it meanwhile (a GPU
 *   wait elsewhere granted in that gap put vLLM's engine ahead of requests already sent). Pipes do not hold:
 *   their readers are often outside the run (a program's captured output).
 * TIMEWARP_MSG_STAMPS=0 turns it off (every wake by a descriptor falls back to the run's highest time).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <netinet/in.h>
#include <poll.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "tw/raw_syscall.h"
#include "tw_libc.h"

/* ---------------------------------------------------------------- weak fallbacks (no core: no keeper) */
__attribute__((weak)) void tw_tk_msg_sent(uint64_t key, int hold) { (void)key; (void)hold; }
__attribute__((weak)) int tw_tk_msg_at(uint64_t key, uint64_t *t) { (void)key; (void)t; return 0; }
__attribute__((weak)) void tw_tk_reader_running(void) {}
__attribute__((weak)) int tw_tk_msg_first_at(uint64_t key, uint64_t *t) { (void)key; (void)t; return 0; }
__attribute__((weak)) void tw_tk_msg_reader(uint64_t key) { (void)key; }


/* ---------------------------------------------------------------- keys */
static inline uint64_t mix(uint64_t a, uint64_t b) {
    uint64_t h = (a ^ 0x9e3779b97f4a7c15ull) * 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h = (h ^ b) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
    return h | 1;   /* 0 means "no key" */
}

static uint64_t hash_bytes(const void *p, size_t n) {
    const unsigned char *c = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 0x100000001b3ull;
    return h;
}

enum { FD_UNKNOWN = 0, FD_UNTRACKED = 1, FD_TRACKED = 2 };
/* hold: 0 a channel whose messages do not hold the clock (pipes), 1 one whose do, HOLD_SIGNAL an eventfd */
enum { HOLD_SIGNAL = 2 };
typedef struct { uint32_t kind, pid, hold, pad; uint64_t kw, kr, ino; } fd_keys;
#define FD_CACHE 16384
static fd_keys fd_cache[FD_CACHE];
static int stamps_on = -1;   /* TIMEWARP_MSG_STAMPS */

static int msg_stamps_on(void) { return tw_libc_switch_on("TIMEWARP_MSG_STAMPS", &stamps_on); }

/* this process's id, cached (a fork child forgets it) */
static uint32_t cached_pid;
static void forget_pid(void) { cached_pid = 0; }
static uint32_t my_pid(void) {
    if (__builtin_expect(cached_pid == 0, 0)) {
        static int registered;
        if (!__atomic_exchange_n(&registered, 1, __ATOMIC_ACQ_REL)) pthread_atfork(NULL, NULL, forget_pid);
        cached_pid = (uint32_t)tw_sys6(SYS_getpid, 0, 0, 0, 0, 0, 0);
    }
    return cached_pid;
}

/* A process-private condvar or semaphore, as a channel within this process (condvar.c: a signal is its
 * message; semaphore.c: a feeder's post). Two such objects never share an address at once. */
uint64_t tw_msg_sync_key(const void *obj) { return mix(mix('C', my_pid()), (uint64_t)(uintptr_t)obj); }

/* The inode of a connected Unix socket's peer, from the kernel's sock_diag (0: not connected, or unknown). */
static uint32_t unix_peer_inode(uint32_t ino) {
    int nl = (int)tw_sys6(SYS_socket, AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG, 0, 0, 0);
    if (nl < 0) return 0;
    struct { struct nlmsghdr h; struct unix_diag_req r; } q;
    memset(&q, 0, sizeof q);
    q.h.nlmsg_len = sizeof q;
    q.h.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    q.h.nlmsg_flags = NLM_F_REQUEST;
    q.r.sdiag_family = AF_UNIX;
    q.r.udiag_states = ~0u;
    q.r.udiag_ino = ino;
    q.r.udiag_show = UDIAG_SHOW_PEER;
    q.r.udiag_cookie[0] = q.r.udiag_cookie[1] = ~0u;
    uint32_t peer = 0;
    union { char buf[512]; struct nlmsghdr align; } u;
    if (tw_sys6(SYS_sendto, nl, (long)&q, sizeof q, 0, 0, 0) == (long)sizeof q) {
        long n = tw_sys6(SYS_recvfrom, nl, (long)u.buf, sizeof u.buf, 0, 0, 0);
        struct nlmsghdr *h = &u.align;
        if (n >= (long)NLMSG_LENGTH(sizeof(struct unix_diag_msg)) && h->nlmsg_type == SOCK_DIAG_BY_FAMILY &&
            h->nlmsg_len <= (uint32_t)n) {
            struct unix_diag_msg *m = NLMSG_DATA(h);
            struct rtattr *a = (struct rtattr *)(m + 1);
            int len = (int)h->nlmsg_len - (int)NLMSG_LENGTH(sizeof *m);
            for (; RTA_OK(a, len); a = RTA_NEXT(a, len))
                if (a->rta_type == UNIX_DIAG_PEER && RTA_PAYLOAD(a) >= sizeof(uint32_t)) memcpy(&peer, RTA_DATA(a), 4);
        }
    }
    tw_sys6(SYS_close, nl, 0, 0, 0, 0, 0);
    return peer;
}

/* The key of connections to a listening address: its port (a server listening on 0.0.0.0 is reached at
 * 127.0.0.1), or its Unix path. 0: not a kind tracked. */
static uint64_t listen_key(const struct sockaddr_storage *a, socklen_t len) {
    if (a->ss_family == AF_INET) return mix('L', ((const struct sockaddr_in *)a)->sin_port);
    if (a->ss_family == AF_INET6) return mix('L', ((const struct sockaddr_in6 *)a)->sin6_port);
    if (a->ss_family == AF_UNIX && len > offsetof(struct sockaddr_un, sun_path))
        return mix('P', hash_bytes(((const struct sockaddr_un *)a)->sun_path, strnlen(((const struct sockaddr_un *)a)->sun_path,
                                   len - offsetof(struct sockaddr_un, sun_path))));
    return 0;
}

/* Keys descriptor fd: FD_TRACKED with both keys, FD_UNTRACKED for good (files, devices, listening or
 * unconnected sockets are only looked at again after close), or FD_UNKNOWN (could not tell: not cached). */
static int classify(int fd, uint64_t *kw, uint64_t *kr, uint32_t *hold, uint64_t *ino, int *cache) {
    struct stat st;
    *cache = 1;
    *hold = 0;
    if (tw_sys6(SYS_fstat, fd, (long)&st, 0, 0, 0, 0) != 0) { *cache = 0; return FD_UNKNOWN; }
    *ino = st.st_ino;
    switch (st.st_mode & S_IFMT) {
    case S_IFIFO:
        *kw = *kr = mix(mix('F', st.st_dev), st.st_ino);
        return FD_TRACKED;
    case S_IFSOCK: {
        int dom = 0, acc = 0;
        socklen_t l = sizeof dom, la = sizeof acc;
        if (tw_sys6(SYS_getsockopt, fd, SOL_SOCKET, SO_DOMAIN, (long)&dom, (long)&l, 0) != 0) { *cache = 0; return FD_UNKNOWN; }
        if (tw_sys6(SYS_getsockopt, fd, SOL_SOCKET, SO_ACCEPTCONN, (long)&acc, (long)&la, 0) == 0 && acc) {
            /* listening: readable when a connection arrives, which connect() stamped (listen_key) */
            struct sockaddr_storage a;
            socklen_t la2 = sizeof a;
            memset(&a, 0, sizeof a);
            if (tw_sys6(SYS_getsockname, fd, (long)&a, (long)&la2, 0, 0, 0) != 0 || !(*kr = listen_key(&a, la2)))
                return FD_UNTRACKED;
            *kw = 0;
            *hold = 1;
            return FD_TRACKED;
        }
        if (dom == AF_UNIX) {
            uint32_t peer = unix_peer_inode((uint32_t)st.st_ino);
            if (!peer) { *cache = 0; return FD_UNTRACKED; }   /* listening, or not connected yet */
            *kw = mix(mix('U', st.st_ino), peer);
            *kr = mix(mix('U', peer), st.st_ino);
            *hold = 1;
            return FD_TRACKED;
        }
        if (dom == AF_INET || dom == AF_INET6) {
            struct sockaddr_storage a, b;
            socklen_t la = sizeof a, lb = sizeof b;
            memset(&a, 0, sizeof a);
            memset(&b, 0, sizeof b);
            if (tw_sys6(SYS_getsockname, fd, (long)&a, (long)&la, 0, 0, 0) != 0 ||
                tw_sys6(SYS_getpeername, fd, (long)&b, (long)&lb, 0, 0, 0) != 0) {
                *cache = 0;   /* listening, or not connected yet */
                return FD_UNTRACKED;
            }
            uint64_t ha = hash_bytes(&a, la), hb = hash_bytes(&b, lb);
            *kw = mix(mix('I', ha), hb);
            *kr = mix(mix('I', hb), ha);
            *hold = 1;
            return FD_TRACKED;
        }
        return FD_UNTRACKED;
    }
    case 0: {   /* an anonymous inode: eventfd, timerfd, signalfd, epoll... */
        char path[32], link[32];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        long n = tw_sys6(SYS_readlink, (long)path, (long)link, sizeof link - 1, 0, 0, 0);
        if (n <= 0) { *cache = 0; return FD_UNKNOWN; }
        link[n] = 0;
        if (strcmp(link, "anon_inode:[eventfd]") != 0) return FD_UNTRACKED;
        *kw = *kr = mix(mix('E', my_pid()), (uint64_t)fd);
        *hold = HOLD_SIGNAL;
        return FD_TRACKED;
    }
    default:
        return FD_UNTRACKED;
    }
}

/* The keys of fd (FD_TRACKED), FD_UNTRACKED, or FD_UNKNOWN; *hold: whether its messages hold the clock.
 * verify: check that a cached entry is still the same file (a descriptor closed where no interposer sees
 * it, glibc's fclose say, and reused: a reader must not take a stamp of the channel it had before). */
static int fd_lookup(int fd, uint64_t *kw, uint64_t *kr, uint32_t *hold, int verify) {
    if (fd < 0) return FD_UNTRACKED;
    fd_keys *e = fd < FD_CACHE ? &fd_cache[fd] : NULL;
    if (e) {
        uint32_t kind = __atomic_load_n(&e->kind, __ATOMIC_ACQUIRE);
        if (kind == FD_UNTRACKED) return kind;
        if (kind == FD_TRACKED && e->pid == my_pid()) {
            struct stat st;
            if (!verify || (tw_sys6(SYS_fstat, fd, (long)&st, 0, 0, 0, 0) == 0 && (uint64_t)st.st_ino == e->ino)) {
                *kw = e->kw;
                *kr = e->kr;
                *hold = e->hold;
                return kind;
            }
        }
    }
    int cache;
    uint64_t ino = 0;
    int kind = classify(fd, kw, kr, hold, &ino, &cache);
    if (e && cache) {
        e->kw = *kw;
        e->kr = *kr;
        e->hold = *hold;
        e->ino = ino;
        e->pid = my_pid();
        __atomic_store_n(&e->kind, (uint32_t)kind, __ATOMIC_RELEASE);
    }
    return kind;
}

static void fd_forget(int fd) {
    if (fd >= 0 && fd < FD_CACHE) __atomic_store_n(&fd_cache[fd].kind, FD_UNKNOWN, __ATOMIC_RELEASE);
}

/* syscall(SYS_close / SYS_close_range) (libuv closes this way): syscall.c tells us */
void tw_msg_forget(long first, long last) {
    if (first < 0) return;
    if (last >= FD_CACHE) last = FD_CACHE - 1;
    for (long fd = first; fd <= last; fd++) fd_forget((int)fd);
}

/* Whether writes are stamped here and now: under the run's time keeper, stamps on. */
static int stamping(void) { return tw_libc_virtual() && msg_stamps_on() && tw_libc_keeper(); }

/* Stamp channel key with this thread's time (the core's clock, read as the shim). */
static void stamp(uint64_t key, int hold) {
    tw_libc_bookkeeping_begin();
    tw_tk_msg_sent(key, hold);
    tw_libc_bookkeeping_end();
}

/* Before data (or end of file) can reach fd's reader: stamp its writing direction. */
static void msg_written(int fd) {
    if (fd >= 0 && fd < FD_CACHE && __atomic_load_n(&fd_cache[fd].kind, __ATOMIC_RELAXED) == FD_UNTRACKED) return;
    if (!stamping()) return;
    int saved = errno;
    uint64_t kw, kr;
    uint32_t hold;
    tw_libc_bookkeeping_begin();
    if (fd_lookup(fd, &kw, &kr, &hold, 0) == FD_TRACKED) tw_tk_msg_sent(kw, (int)hold);
    tw_libc_bookkeeping_end();
    errno = saved;
}

/* ---------------------------------------------------------------- the wake rule */
/* Per thread, while a wait's result is looked at: the latest stamp seen, and whether any readable
 * descriptor was not tracked (then the run's highest time), or any was readable at all. */
static __thread struct { uint64_t at; int unknown, readable, used; } wake __attribute__((tls_model("initial-exec")));

static void tw_msg_wake_reset(void) { wake.at = 0; wake.unknown = wake.readable = 0; wake.used = 1; }

/* TIMEWARP_MSG_LOG=1: name (on stderr) the descriptors whose wake-ups fall back to the run's highest time */
static void log_fallback(int fd, const char *why) {
    static int on = -1, n;
    if (on < 0) { const char *v = getenv("TIMEWARP_MSG_LOG"); on = v && *v == '1'; }
    if (!on || __atomic_add_fetch(&n, 1, __ATOMIC_RELAXED) > 200) return;
    char path[32], link[128];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    long k = tw_sys6(SYS_readlink, (long)path, (long)link, sizeof link - 1, 0, 0, 0);
    link[k > 0 ? k : 0] = 0;
    fprintf(stderr, "timewarp: pid %u: wake by fd %d (%s) falls back: %s\n", my_pid(), fd, link, why);
}

/* A readable descriptor, keyed (kind, kr and hold from fd_lookup), takes part in the wake-up: its latest
 * stamp; for an eventfd (hold == HOLD_SIGNAL), its earliest unseen one. An eventfd carries no data, only
 * "look": a reader waiting on it would have woken at the first signal, and what it then finds in memory
 * carries its own time where it matters (integrations/executor_clock.py: each result raises the loop to
 * its finish time). At the latest signal, an event loop that ran late in real time took every pending
 * result at the last one's time, in one clump. TIMEWARP_SIGNAL_FIRST=0: the latest, as for data. */
static int signal_first_on(void) {
    static int on = -1;
    return tw_libc_switch_on("TIMEWARP_SIGNAL_FIRST", &on);
}

static void wake_keyed(int fd, int kind, uint64_t kr, uint32_t hold) {
    wake.readable = 1;
    if (kind != FD_TRACKED) { wake.unknown = 1; log_fallback(fd, "not tracked"); return; }
    uint64_t t, latest;
    tw_libc_depth++;
    int found = hold == HOLD_SIGNAL && signal_first_on() && tw_tk_msg_first_at(kr, &t)
                    ? (tw_tk_msg_at(kr, &latest), 1)   /* marks it seen */
                    : tw_tk_msg_at(kr, &t);
    tw_libc_depth--;
    if (!found) { wake.unknown = 1; log_fallback(fd, "no stamp"); return; }
    if (t > wake.at) wake.at = t;
}

static void tw_msg_wake_fd(int fd, int readable) {
    if (!readable) return;
    if (!msg_stamps_on()) { wake.readable = wake.unknown = 1; return; }
    uint64_t kw, kr;
    uint32_t hold;
    int kind = fd_lookup(fd, &kw, &kr, &hold, 1);
    wake_keyed(fd, kind, kr, hold);
}

static void tw_msg_wake_unknown(void) { wake.unknown = 1; wake.readable = 1; }

int tw_msg_wake_resolve(uint64_t *t) {
    if (!wake.used) return TW_WAKE_ANY;
    wake.used = 0;
    if (wake.unknown) return TW_WAKE_ANY;
    if (!wake.readable) return TW_WAKE_LOCAL;   /* only writable: buffer space, this side's business */
    *t = wake.at;
    return TW_WAKE_AT;
}

/* Before a blocking poll: the calling thread is the reader of each tracked descriptor it waits to read, so
 * that a hold on a channel's first message knows whom to look at (tk_shared.c, reader_woken). */
void tw_msg_watch_poll(const struct pollfd *fds, unsigned long n) {
    if (!msg_stamps_on()) return;
    tw_libc_bookkeeping_begin();
    for (nfds_t i = 0; i < n; i++) {
        uint64_t kw, kr;
        uint32_t hold;
        if (fds[i].fd >= 0 && (fds[i].events & POLLIN) && fd_lookup(fds[i].fd, &kw, &kr, &hold, 0) == FD_TRACKED)
            tw_tk_msg_reader(kr);
    }
    tw_libc_bookkeeping_end();
}

/* A wait the kernel ended with descriptors ready: the thread runs again before this file's bookkeeping
 * of them (keying a new socket asks the kernel over netlink: 8 ms beside two CPU hogs), during which its
 * slot said it waited and a jump went past the data it had been sent (tests/progs/zmq_connect.py). */
static void woken_ready(int r) {
    if (r <= 0) return;
    tw_libc_depth++;
    tw_tk_reader_running();
    tw_libc_depth--;
}

void tw_msg_wake_poll(const struct pollfd *fds, unsigned long n, int r) {
    woken_ready(r);
    tw_msg_wake_reset();
    if (r < 0) { tw_msg_wake_unknown(); log_fallback(-1, "interrupted (poll)"); return; }   /* a signal: from anywhere */
    for (nfds_t i = 0; i < n; i++)
        if (fds[i].fd >= 0 && fds[i].revents)
            tw_msg_wake_fd(fds[i].fd, fds[i].revents & (POLLIN | POLLPRI | POLLHUP | POLLERR | POLLRDHUP | POLLNVAL));
}

void tw_msg_wake_select(int n, const void *rs, const void *es, int res) {
    const fd_set *r = rs, *e = es;
    woken_ready(res);
    tw_msg_wake_reset();
    if (res < 0) { tw_msg_wake_unknown(); return; }
    for (int fd = 0; fd < n && fd < FD_SETSIZE; fd++)
        if ((r && FD_ISSET(fd, r)) || (e && FD_ISSET(fd, e))) tw_msg_wake_fd(fd, 1);
}

/* ---------------------------------------------------------------- epoll: (epoll fd, user data) -> fd */
#define EP_SLOTS 16384
#define EP_PROBES 64
typedef struct { int32_t epfd1; int32_t fd; uint64_t data; uint32_t events; } ep_entry;   /* epfd1: epoll fd + 1; 0 free, -1 gone */
static ep_entry ep_map[EP_SLOTS];
static struct { int32_t epfd1; uint64_t data; } ep_last[FD_CACHE];   /* per fd: where it was registered last */
static pthread_mutex_t ep_lock = PTHREAD_MUTEX_INITIALIZER;

static inline uint32_t ep_home(int epfd, uint64_t data) { return (uint32_t)(mix((uint64_t)epfd, data) >> 7) & (EP_SLOTS - 1); }

static void ep_put(int epfd, uint64_t data, int fd, uint32_t events) {
    uint32_t h = ep_home(epfd, data);
    ep_entry *free_e = NULL;
    for (uint32_t i = 0; i < EP_PROBES; i++) {
        ep_entry *e = &ep_map[(h + i) & (EP_SLOTS - 1)];
        if (e->epfd1 == epfd + 1 && e->data == data) { e->fd = fd; e->events = events; return; }
        if (e->epfd1 <= 0 && !free_e) free_e = e;
        if (e->epfd1 == 0) break;
    }
    if (free_e) *free_e = (ep_entry){epfd + 1, fd, data, events};
}

static void ep_drop(int epfd, uint64_t data) {
    uint32_t h = ep_home(epfd, data);
    for (uint32_t i = 0; i < EP_PROBES; i++) {
        ep_entry *e = &ep_map[(h + i) & (EP_SLOTS - 1)];
        if (e->epfd1 == 0) return;
        if (e->epfd1 == epfd + 1 && e->data == data) { e->epfd1 = -1; return; }
    }
}

static int ep_fd(int epfd, uint64_t data, uint32_t *events) {
    uint32_t h = ep_home(epfd, data);
    for (uint32_t i = 0; i < EP_PROBES; i++) {
        ep_entry *e = &ep_map[(h + i) & (EP_SLOTS - 1)];
        if (e->epfd1 == 0) return -1;
        if (e->epfd1 == epfd + 1 && e->data == data) { if (events) *events = e->events; return e->fd; }
    }
    return -1;
}

/* The descriptor an epoll event stands for (-1: unknown), and whether it was registered level-triggered. */
static int ep_event_fd(int epfd, const struct epoll_event *ev, int *level) {
    uint32_t events = 0;
    pthread_mutex_lock(&ep_lock);
    int fd = ep_fd(epfd, ev->data.u64, &events);
    pthread_mutex_unlock(&ep_lock);
    *level = !(events & (EPOLLET | EPOLLONESHOT));
    /* registered where no interposer saw it (libuv, in uvloop, batches epoll_ctl through io_uring or the
     * raw system call): libuv's user data is the descriptor itself, and it registers level-triggered */
    if (fd < 0 && ev->data.u64 <= 0x7fffffff && tw_sys6(SYS_fcntl, (long)ev->data.u64, F_GETFD, 0, 0, 0, 0) >= 0)
        fd = (int)ev->data.u64;
    return fd;
}

/* Whether any of r events was registered edge-triggered or one-shot: the kernel reports those once. */
int tw_msg_epoll_once(int epfd, const struct epoll_event *ev, int r) {
    for (int i = 0; i < r; i++) {
        int level;
        (void)ep_event_fd(epfd, &ev[i], &level);
        if (!level) return 1;
    }
    return 0;
}

void tw_msg_wake_epoll(int epfd, const struct epoll_event *ev, int r) {
    woken_ready(r);
    tw_msg_wake_reset();
    if (r < 0) { tw_msg_wake_unknown(); return; }
    for (int i = 0; i < r; i++) {
        int readable = (ev[i].events & (EPOLLIN | EPOLLPRI | EPOLLHUP | EPOLLERR | EPOLLRDHUP)) != 0;
        if (!readable) continue;
        int level;
        int fd = ep_event_fd(epfd, &ev[i], &level);
        if (fd < 0) { tw_msg_wake_unknown(); log_fallback(epfd, "epoll data not mapped"); }
        else tw_msg_wake_fd(fd, 1);
    }
}

/* ---------------------------------------------------------------- a non-blocking check's view */
/* After a non-blocking check at virtual time t (wait.c, once no thread of another process can act before
 * t any more): a readable descriptor whose unseen data was all written after t (by a thread that ran ahead
 * in real time) is not reported: at t its reader would not have found it. Level-triggered registrations
 * only (poll, select, epoll without EPOLLET/EPOLLONESHOT), which report it again at the next check. The
 * reader's clock then stays where it is: before, such a check moved the reader to the data's time, which
 * dragged a busy event loop to the clock of a process computing ahead of it. The descriptors still
 * reported take part in the wake-up as a wait's do (tw_msg_wake_resolve), each keyed once for both.
 * Returns the number still reported. */

/* Readable fd, which may be hidden (hideable): 1 if it is (its data all written after t), else 0 and its
 * stamp taken into the wake-up. *kind and *kr: its keys, for a caller that records it anyway. */
static int view_fd(int fd, int hideable, uint64_t t, int *kind, uint64_t *kr, uint32_t *hold) {
    uint64_t kw, first;
    *kind = fd_lookup(fd, &kw, kr, hold, 1);
    if (hideable && *kind == FD_TRACKED) {
        tw_libc_depth++;
        int found = tw_tk_msg_first_at(*kr, &first);
        tw_libc_depth--;
        if (found && first > t) return 1;
    }
    wake_keyed(fd, *kind, *kr, *hold);
    return 0;
}

#define READ_EVENTS (POLLIN | POLLRDNORM | POLLRDBAND | POLLPRI)
#define WAKE_EVENTS (POLLIN | POLLPRI | POLLHUP | POLLERR | POLLRDHUP | POLLNVAL)
int tw_msg_view_poll(struct pollfd *fds, unsigned long n, int r, uint64_t t) {
    if (!msg_stamps_on()) { tw_msg_wake_poll(fds, n, r); return r; }
    tw_msg_wake_reset();
    for (nfds_t i = 0; i < n; i++) {
        short rev = fds[i].revents;
        if (fds[i].fd < 0 || !(rev & WAKE_EVENTS)) continue;
        int hideable = (rev & READ_EVENTS) && !(rev & (POLLHUP | POLLERR | POLLNVAL)), kind;
        uint64_t kr;
        uint32_t hold;
        if (!view_fd(fds[i].fd, hideable, t, &kind, &kr, &hold)) continue;
        fds[i].revents = (short)(rev & ~READ_EVENTS);
        if (!fds[i].revents) r--;
        else if (fds[i].revents & POLLRDHUP) wake_keyed(fds[i].fd, kind, kr, hold);
    }
    return r;
}

int tw_msg_view_epoll(int epfd, struct epoll_event *ev, int r, uint64_t t) {
    if (!msg_stamps_on()) { tw_msg_wake_epoll(epfd, ev, r); return r; }
    tw_msg_wake_reset();
    int out = 0;
    for (int i = 0; i < r; i++) {
        uint32_t e = ev[i].events;
        if (e & (EPOLLIN | EPOLLPRI | EPOLLHUP | EPOLLERR | EPOLLRDHUP)) {
            int level, kind;
            uint64_t kr;
            uint32_t hold;
            int fd = ep_event_fd(epfd, &ev[i], &level);
            if (fd < 0) { tw_msg_wake_unknown(); log_fallback(epfd, "epoll data not mapped"); }
            else if (view_fd(fd, level && (e & (EPOLLIN | EPOLLPRI)) && !(e & (EPOLLHUP | EPOLLERR)), t, &kind, &kr, &hold)) {
                e &= ~(uint32_t)(EPOLLIN | EPOLLPRI | EPOLLRDNORM | EPOLLRDBAND);
                if (!(e & (EPOLLOUT | EPOLLWRNORM | EPOLLWRBAND))) continue;   /* nothing left to report */
                if (e & EPOLLRDHUP) wake_keyed(fd, kind, kr, hold);
            }
        }
        ev[out] = ev[i];
        ev[out].events = e;
        out++;
    }
    return out;
}

/* ---------------------------------------------------------------- interposers */
static int (*real_epoll_ctl)(int, int, int, struct epoll_event *);
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static ssize_t (*real_send)(int, const void *, size_t, int);
static ssize_t (*real_sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
static ssize_t (*real_sendmsg)(int, const struct msghdr *, int);
static int (*real_sendmmsg)(int, struct mmsghdr *, unsigned, int);
static int (*real_close)(int);
static int (*real_shutdown)(int, int);
static int (*real_dup2)(int, int);
static int (*real_dup3)(int, int, int);
static int (*real_close_range)(unsigned, unsigned, int);
static int (*real_connect)(int, const struct sockaddr *, socklen_t);

#include <dlfcn.h>
/* Resolved at first use; the raw system call stands in while dlsym itself runs (it may write an error). */
#define REAL(name) (__builtin_expect(real_##name != NULL, 1) ? real_##name : resolve_##name())
#define RESOLVER(name)                                                                              \
    static __typeof__(real_##name) resolve_##name(void) {                                           \
        static __thread int busy;                                                                   \
        if (busy) return NULL;                                                                      \
        busy = 1;                                                                                   \
        void *p = dlsym(RTLD_NEXT, #name);                                                          \
        busy = 0;                                                                                   \
        __typeof__(real_##name) f;                                                                  \
        memcpy(&f, &p, sizeof p);                                                                   \
        __atomic_store_n(&real_##name, f, __ATOMIC_RELEASE);                                        \
        return f;                                                                                   \
    }
RESOLVER(epoll_ctl)
RESOLVER(write)
RESOLVER(writev)
RESOLVER(send)
RESOLVER(sendto)
RESOLVER(sendmsg)
RESOLVER(sendmmsg)
RESOLVER(close)
RESOLVER(shutdown)
RESOLVER(dup2)
RESOLVER(dup3)
RESOLVER(close_range)
RESOLVER(connect)

static long raw_result(long r) {
    if (r < 0 && r > -4096) { errno = (int)-r; return -1; }
    return r;
}

TW_EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev) {
    __typeof__(real_epoll_ctl) f = REAL(epoll_ctl);
    int r = f ? f(epfd, op, fd, ev) : (int)raw_result(tw_sys6(SYS_epoll_ctl, epfd, op, fd, (long)ev, 0, 0));
    if (r == 0) tw_msg_epoll_ctl(epfd, op, fd, ev);
    return r;
}

/* epoll_ctl succeeded: remember which descriptor (epfd, data) stands for (also syscall(SYS_epoll_ctl)). */
void tw_msg_epoll_ctl(int epfd, int op, int fd, const struct epoll_event *ev) {
    if (epfd < 0 || fd < 0) return;
    pthread_mutex_lock(&ep_lock);
    if ((op == EPOLL_CTL_ADD || op == EPOLL_CTL_MOD) && ev) {
        if (fd < FD_CACHE) {
            if (ep_last[fd].epfd1 == epfd + 1 && ep_last[fd].data != ev->data.u64) ep_drop(epfd, ep_last[fd].data);
            ep_last[fd].epfd1 = epfd + 1;
            ep_last[fd].data = ev->data.u64;
        }
        ep_put(epfd, ev->data.u64, fd, ev->events);
    } else if (op == EPOLL_CTL_DEL && fd < FD_CACHE && ep_last[fd].epfd1 == epfd + 1) {
        ep_drop(epfd, ep_last[fd].data);
        ep_last[fd].epfd1 = 0;
    }
    pthread_mutex_unlock(&ep_lock);
    /* the thread that asks to read fd is taken as its reader (event loops register from their own thread),
     * so that a hold on its first message knows whom to look at, as a poll's does (tw_msg_watch_poll): a
     * ZMQ I/O thread that the machine scheduled late let the clock jump past a connection in its listener */
    if ((op == EPOLL_CTL_ADD || op == EPOLL_CTL_MOD) && ev && (ev->events & EPOLLIN) && tw_tk_first_look() &&
        stamping()) {
        uint64_t kw, kr;
        uint32_t hold;
        tw_libc_bookkeeping_begin();
        if (fd_lookup(fd, &kw, &kr, &hold, 0) == FD_TRACKED && hold) tw_tk_msg_reader(kr);
        tw_libc_bookkeeping_end();
    }
}

TW_EXPORT ssize_t write(int fd, const void *buf, size_t n) {
    msg_written(fd);
    __typeof__(real_write) f = REAL(write);
    return f ? f(fd, buf, n) : raw_result(tw_sys6(SYS_write, fd, (long)buf, (long)n, 0, 0, 0));
}

TW_EXPORT ssize_t writev(int fd, const struct iovec *iov, int n) {
    msg_written(fd);
    __typeof__(real_writev) f = REAL(writev);
    return f ? f(fd, iov, n) : raw_result(tw_sys6(SYS_writev, fd, (long)iov, n, 0, 0, 0));
}

TW_EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags) {
    msg_written(fd);
    __typeof__(real_send) f = REAL(send);
    return f ? f(fd, buf, n, flags) : raw_result(tw_sys6(SYS_sendto, fd, (long)buf, (long)n, flags, 0, 0));
}

TW_EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *to, socklen_t tl) {
    msg_written(fd);
    __typeof__(real_sendto) f = REAL(sendto);
    return f ? f(fd, buf, n, flags, to, tl) : raw_result(tw_sys6(SYS_sendto, fd, (long)buf, (long)n, flags, (long)to, tl));
}

TW_EXPORT ssize_t sendmsg(int fd, const struct msghdr *m, int flags) {
    msg_written(fd);
    __typeof__(real_sendmsg) f = REAL(sendmsg);
    return f ? f(fd, m, flags) : raw_result(tw_sys6(SYS_sendmsg, fd, (long)m, flags, 0, 0, 0));
}

TW_EXPORT int sendmmsg(int fd, struct mmsghdr *v, unsigned n, int flags) {
    msg_written(fd);
    __typeof__(real_sendmmsg) f = REAL(sendmmsg);
    return f ? f(fd, v, n, flags) : (int)raw_result(tw_sys6(SYS_sendmmsg, fd, (long)v, n, flags, 0, 0));
}

/* A connection reaches a listening socket's reader: stamp the address's key before it can. */
TW_EXPORT int connect(int fd, const struct sockaddr *to, socklen_t len) {
    if (to && len >= sizeof(sa_family_t) && len <= sizeof(struct sockaddr_storage) && stamping()) {
        struct sockaddr_storage a;
        memset(&a, 0, sizeof a);
        memcpy(&a, to, len);
        uint64_t key = listen_key(&a, len);
        int saved = errno;
        if (key) stamp(key, 1);
        errno = saved;
    }
    __typeof__(real_connect) f = REAL(connect);
    return f ? f(fd, to, len) : (int)raw_result(tw_sys6(SYS_connect, fd, (long)to, len, 0, 0, 0));
}

TW_EXPORT int shutdown(int fd, int how) {
    if (how != SHUT_RD) msg_written(fd);
    __typeof__(real_shutdown) f = REAL(shutdown);
    return f ? f(fd, how) : (int)raw_result(tw_sys6(SYS_shutdown, fd, how, 0, 0, 0, 0));
}

/* Not stamped: a vfork()ed child (subprocess) closes the parent's descriptors on the parent's thread-local
 * clock; a reader woken by end of file alone falls back to the run's highest time. */
TW_EXPORT int close(int fd) {
    fd_forget(fd);
    __typeof__(real_close) f = REAL(close);
    return f ? f(fd) : (int)raw_result(tw_sys6(SYS_close, fd, 0, 0, 0, 0, 0));
}

TW_EXPORT int close_range(unsigned first, unsigned last, int flags) {
    __typeof__(real_close_range) f = REAL(close_range);
    int r = f ? f(first, last, flags) : (int)raw_result(tw_sys6(SYS_close_range, first, last, flags, 0, 0, 0));
    if (r == 0 && !(flags & CLOSE_RANGE_CLOEXEC)) tw_msg_forget((long)first, last > 0x7fffffff ? 0x7fffffff : (long)last);
    return r;
}

TW_EXPORT int dup2(int old, int fd) {
    __typeof__(real_dup2) f = REAL(dup2);
    int r = f ? f(old, fd) : (int)raw_result(tw_sys6(SYS_dup2, old, fd, 0, 0, 0, 0));
    if (r >= 0) fd_forget(r);
    return r;
}

TW_EXPORT int dup3(int old, int fd, int flags) {
    __typeof__(real_dup3) f = REAL(dup3);
    int r = f ? f(old, fd, flags) : (int)raw_result(tw_sys6(SYS_dup3, old, fd, flags, 0, 0, 0));
    if (r >= 0) fd_forget(r);
    return r;
}
