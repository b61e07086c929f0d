/* Records of what ran on the virtual timelines: a Chrome/Perfetto trace (TIMEWARP_TRACE=file) and the
 * per-process report line (TIMEWARP_REPORT=file, JSON lines appended at exit) that `timewarp run`
 * summarises. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/uio.h>
#include <sys/syscall.h>
#include <time.h>
#include "internal.h"
#include "graph_internal.h"
#include "tw/raw_syscall.h"

typedef struct { const tw_kernel *k; const char *label; uint64_t start, end, issued, stream; int dev, kind; uint32_t grid[3], block[3]; tw_annotation ann; size_t bytes; int dir, layer, pinned, ptr_args; int64_t rows[2]; } rec;
/* Records live in blocks that never move, so that the trace writer thread reads the ones before nrecs
 * without the shim's lock while launches append more. */
#define REC_BLOCK 65536
#define REC_BLOCKS 16384
static rec *blocks[REC_BLOCKS];
static size_t nrecs, maxrecs = 2000000;   /* nrecs: written under tw_lock, read by the writer (acquire) */
/* a running process's trace snapshots, in real time (TIMEWARP_TRACE_SNAPSHOT_S; 0: none, the trace is written at
 * exit only). 2 s: vLLM kills its engine core at shutdown, and what came after its last snapshot is lost; at
 * 20 s most of a short benchmark case was (the writer thread makes frequent snapshots cheap for the program) */
static int64_t trace_every_ns = 2000000000LL;
static int tracing;
static const char *trace_path, *report_path;
static int trace_writer_started;   /* in this process (a forked child starts its own) */
static void start_trace_writer(void);
static void trace_prefork(void), trace_postfork_parent(void), trace_postfork_child(void);
void tw_graph_exec_trace(const tw_graph_exec *x, int dev, uint64_t stream_id, uint64_t start, uint64_t end,
                         uint64_t issued);

/* Copies, not getenv's pointers: setproctitle (vLLM names its processes "VLLM::EngineCore") reuses the
 * memory of the original environment for the new title. */
static const char *env_copy(const char *name) {
    const char *v = getenv(name);
    return v ? strdup(v) : NULL;
}

void tw_trace_init(void) {
    trace_path = env_copy("TIMEWARP_TRACE");
    report_path = env_copy("TIMEWARP_REPORT");
    tracing = trace_path && *trace_path;
    const char *m = getenv("TIMEWARP_TRACE_MAX");
    if (m) maxrecs = strtoull(m, NULL, 0);
    const char *e = getenv("TIMEWARP_TRACE_SNAPSHOT_S");
    if (e) trace_every_ns = (int64_t)(strtod(e, NULL) * 1e9);
    if (maxrecs > (size_t)REC_BLOCK * REC_BLOCKS) maxrecs = (size_t)REC_BLOCK * REC_BLOCKS;
    if (tracing) pthread_atfork(trace_prefork, trace_postfork_parent, trace_postfork_child);
}

/* called with tw_lock held */
void tw_record(int dev, uint64_t stream_id, const tw_op *op, uint64_t start, uint64_t end, uint64_t issued) {
    if (!tracing) return;
    if (op->kind == TW_OP_GRAPH && op->exec) { tw_graph_exec_trace(op->exec, dev, stream_id, start, end, issued); return; }
    if (nrecs >= maxrecs) return;
    rec **b = &blocks[nrecs / REC_BLOCK];
    if (!*b && !(*b = malloc(REC_BLOCK * sizeof **b))) return;
    (*b)[nrecs % REC_BLOCK] = (rec){op->kernel, op->label, start, end, issued, stream_id, dev, op->kind,
               {op->grid[0], op->grid[1], op->grid[2]}, {op->block[0], op->block[1], op->block[2]}, op->ann, op->bytes,
               op->dir, op->layer, op->pinned, op->ptr_args, {op->rows[0], op->rows[1]}};
    __atomic_store_n(&nrecs, nrecs + 1, __ATOMIC_RELEASE);
    if (!trace_writer_started) start_trace_writer();
}

static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\') { fputc('\\', f); fputc(*s, f); }
        else if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", *s);
        else fputc(*s, f);
    }
    fputc('"', f);
}

static void write_rec(FILE *f, size_t i) {
    const rec *r = &blocks[i / REC_BLOCK][i % REC_BLOCK];
    fprintf(f, ",{\"ph\":\"X\",\"pid\":%d,\"tid\":%llu,\"ts\":%.3f,\"dur\":%.3f,\"name\":", r->dev,
            (unsigned long long)r->stream, r->start / 1e3, (r->end - r->start) / 1e3);
    json_str(f, r->k ? r->k->name : r->label);
    fprintf(f, ",\"args\":{\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"layer\":\"%s\",\"issued\":%.3f", r->grid[0],
            r->grid[1], r->grid[2], r->block[0], r->block[1], r->block[2], tw_layer_name(r->layer), r->issued / 1e3);
    if (r->ann.kind == TW_ANN_GEMM)
        fprintf(f, ",\"gemm\":{\"m\":%lld,\"n\":%lld,\"k\":%lld,\"batch\":%lld,\"ta\":%d,\"tb\":%d,\"a\":%d,\"b\":%d,\"c\":%d,"
                   "\"compute\":%d,\"epilogue\":%d}", (long long)r->ann.u.gemm.m, (long long)r->ann.u.gemm.n,
                (long long)r->ann.u.gemm.k, (long long)r->ann.u.gemm.batch, r->ann.u.gemm.trans_a, r->ann.u.gemm.trans_b,
                r->ann.u.gemm.a_type, r->ann.u.gemm.b_type, r->ann.u.gemm.c_type, r->ann.u.gemm.compute_type,
                r->ann.u.gemm.epilogue);
    else if (r->ann.kind == TW_ANN_ATTENTION)
        fprintf(f, ",\"attention\":{\"batch\":%lld,\"q\":%lld,\"kv\":%lld,\"heads\":%lld,\"kv_heads\":%lld,\"d\":%lld,"
                   "\"causal\":%d,\"dtype\":%d}", (long long)r->ann.u.attn.batch, (long long)r->ann.u.attn.q_len,
                (long long)r->ann.u.attn.kv_len, (long long)r->ann.u.attn.heads, (long long)r->ann.u.attn.kv_heads,
                (long long)r->ann.u.attn.head_dim, r->ann.u.attn.causal, r->ann.u.attn.dtype);
    if (r->kind == TW_OP_MEMCPY || r->kind == TW_OP_MEMSET) fprintf(f, ",\"bytes\":%zu,\"dir\":%d,\"pinned\":%d", r->bytes, r->dir, r->pinned);
    if (r->rows[0] > 0) fprintf(f, ",\"rows\":[%lld,%lld]", (long long)r->rows[0], (long long)r->rows[1]);
    if (r->ptr_args > 0) fprintf(f, ",\"ptr_args\":%d", r->ptr_args);
    fprintf(f, "}}\n");
}

/* The trace is written incrementally: each write appends the records since the last one, then the closing
 * "]}", which the next write overwrites. Why: a process that may be killed (vLLM's engine core) must leave
 * a trace while it runs, and rewriting a trace of a million records (300 MB) every 20 s perturbed the run's
 * timing (case 3 TPOT +53%, docs/LIMITATIONS.md).
 * Every process of a run that does GPU work appends to the one file, under an exclusive flock: with tensor
 * parallelism each worker's device is a process of the trace ("pid" is the device). Before, each process
 * renamed its own first snapshot into place and the last one won: a TP=2 trace held one worker's kernels.
 * A process killed during an append (the lock dies with it) leaves the file cut inside a record; the next
 * append starts after the last whole record, and the launcher mends a cut at the end of the run
 * (integrations/launcher.py, close_trace). `timewarp run` removes an older trace of the path before it starts.
 * Each append is one write of a buffer made beforehand, so a reader that opens the file while it runs sees
 * a partial append only if it reads during that one write. A process that ran nothing on a GPU writes
 * none. Called with trace_file_lock held (append_trace). */
static size_t trace_done;   /* records of this process already in the file */
static pthread_mutex_t trace_file_lock = PTHREAD_MUTEX_INITIALIZER;

static const char TRACE_HEAD[] = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
static const char TRACE_END[] = "]}\n";

/* Where the next append goes in a file of `size` bytes: over the closing "]}" of a whole trace, else after
 * its last whole record ("}}\n"; a process was killed while appending), else after the header. *first: the
 * file holds no record yet. 0 for an empty file, -1 for a file that is not a trace of ours. */
static off_t append_point(int fd, off_t size, int *first) {
    char buf[65536];
    size_t hl = sizeof TRACE_HEAD - 1, el = sizeof TRACE_END - 1;
    *first = 1;
    if (size < (off_t)hl)   /* empty, or a head cut by a kill: written again */
        return pread(fd, buf, (size_t)size, 0) == (ssize_t)size && memcmp(buf, TRACE_HEAD, (size_t)size) == 0 ? 0 : -1;
    if (pread(fd, buf, hl, 0) != (ssize_t)hl || memcmp(buf, TRACE_HEAD, hl) != 0) return -1;
    off_t at = -1;
    if (size >= (off_t)(hl + el) && pread(fd, buf, el, size - el) == (ssize_t)el && memcmp(buf, TRACE_END, el) == 0)
        at = size - el;
    else   /* the last "}}\n", searched backwards a chunk at a time (chunks overlap by two bytes) */
        for (off_t hi = size; hi > (off_t)hl && at < 0;) {
            off_t lo = hi - (off_t)sizeof buf > (off_t)hl ? hi - (off_t)sizeof buf : (off_t)hl;
            ssize_t got = pread(fd, buf, (size_t)(hi - lo), lo);
            if (got != hi - lo) return -1;
            for (ssize_t i = got - 3; i >= 0; i--)
                if (buf[i] == '}' && buf[i + 1] == '}' && buf[i + 2] == '\n') { at = lo + i + 3; break; }
            if (lo == (off_t)hl) break;
            hi = lo + 2;
        }
    if (at < 0) at = (off_t)hl;
    *first = at == (off_t)hl;
    return at;
}

static void write_trace(void) {
    size_t n = __atomic_load_n(&nrecs, __ATOMIC_ACQUIRE);
    if (!n || n == trace_done) return;
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) return;
    for (size_t i = trace_done; i < n; i++) write_rec(m, i);
    fputs(TRACE_END, m);
    if (fclose(m) != 0) { free(buf); return; }
    int fd = open(trace_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) { tw_log("cannot write trace %s: %s", trace_path, strerror(errno)); free(buf); return; }
    while (flock(fd, LOCK_EX) != 0 && errno == EINTR) {}
    int first;
    off_t size = lseek(fd, 0, SEEK_END), at = size < 0 ? -1 : append_point(fd, size, &first);
    if (at < 0) {
        tw_log("trace %s: not a trace timewarp wrote; not appended to", trace_path);
    } else {
        /* the head for an empty file; a record's line starts with "," unless it is the file's first */
        size_t off = first ? 1 : 0;
        struct iovec iov[2] = {{(void *)TRACE_HEAD, at == 0 ? sizeof TRACE_HEAD - 1 : 0}, {buf + off, len - off}};
        size_t total = iov[0].iov_len + iov[1].iov_len;
        if (pwritev(fd, iov, 2, at) == (ssize_t)total) {
            if (ftruncate(fd, at + (off_t)total) != 0) {}   /* past a cut record's remains */
            trace_done = n;
        } else {
            tw_log("trace %s: append failed", trace_path);
        }
    }
    flock(fd, LOCK_UN);
    close(fd);
    free(buf);
}

static void append_trace(void) {
    pthread_mutex_lock(&trace_file_lock);
    write_trace();
    pthread_mutex_unlock(&trace_file_lock);
}

/* The snapshots of a running process are written by a thread of the shim's own, every trace_every_ns of
 * real time. Written from the launching thread (under the shim's lock, which the launching thread held with
 * Python's GIL), a snapshot of tens of MB stalled the program for 0.5-1 s of real time and still moved a
 * served case's TPOT by up to +58%. This thread is created with libc's pthread_create, not the shim's (it
 * takes no part in the time keeper), sleeps on the real clock, reads no clock the shim serves and is never
 * charged: the program's threads do not wait for it. */
static void *trace_writer_main(void *arg) {
    (void)arg;
    for (;;) {
        struct timespec ts = {trace_every_ns / 1000000000, trace_every_ns % 1000000000};
        while (tw_sys2(SYS_nanosleep, &ts, &ts) == -EINTR) {}
        append_trace();
    }
    return NULL;
}

/* fork: the child has no writer thread and must not inherit a lock its parent's writer held; the records it
 * inherited are its parent's to write (both append to the one file). */
static void trace_prefork(void) { pthread_mutex_lock(&trace_file_lock); }
static void trace_postfork_parent(void) { pthread_mutex_unlock(&trace_file_lock); }
static void trace_postfork_child(void) {
    pthread_mutex_init(&trace_file_lock, NULL);
    trace_done = __atomic_load_n(&nrecs, __ATOMIC_ACQUIRE);
    trace_writer_started = 0;
}

/* called with tw_lock held, on this process's first record */
static void start_trace_writer(void) {
    trace_writer_started = 1;   /* set first: a failure is not retried at every launch */
    if (trace_every_ns <= 0) return;
    int (*real_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *) =
        (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))dlsym(RTLD_NEXT, "pthread_create");
    if (!real_create) { tw_log("trace: no pthread_create; a killed process leaves no trace"); return; }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigset_t all, old;   /* the program's signals go to the program's threads */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t t;
    if (real_create(&t, &attr, trace_writer_main, NULL) != 0) tw_log("trace: cannot start the writer thread");
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
}

struct unimpl_ctx { FILE *f; int n; };
static void unimpl_cb(const char *lib, const char *name, long count, void *p) {
    struct unimpl_ctx *c = p;
    fprintf(c->f, "%s", c->n++ ? "," : "");
    json_str(c->f, name);
    fprintf(c->f, ":{\"lib\":");
    json_str(c->f, lib);
    fprintf(c->f, ",\"calls\":%ld}", count);
}

/* The process's report line: predicted wall time, per-device busy time, kernels, copies, memory, and the
 * calls the shim does not implement. `live` marks a snapshot of a process still running. */
static char *report_line(uint64_t now, int live, size_t *len) {
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    if (!f) return NULL;
    char argv0[256] = "";
    int fd = open("/proc/self/cmdline", O_RDONLY);
    if (fd >= 0) {
        ssize_t n = read(fd, argv0, sizeof argv0 - 1);
        if (n > 0) { argv0[n] = 0; for (ssize_t i = 0; i < n - 1; i++) if (!argv0[i]) argv0[i] = ' '; }
        close(fd);
    }
    fprintf(f, "{\"pid\":%d,\"argv\":", (int)getpid());
    json_str(f, argv0);
    fprintf(f, ",\"gpu\":");
    json_str(f, tw_ndevices ? tw_devices[0].spec->key : "");
    fprintf(f, ",\"live\":%s,\"virtual_s\":%.9f,\"devices\":[", live ? "true" : "false", now / 1e9);
    for (int d = 0; d < tw_ndevices; d++) {
        tw_device_state *D = &tw_devices[d];
        fprintf(f, "%s{\"index\":%d,\"busy_s\":%.9f,\"kernels\":%llu,\"copies\":%llu,\"mem_used\":%zu,\"busy_by_layer\":{",
                d ? "," : "", d, D->busy_ns / 1e9, (unsigned long long)D->kernels, (unsigned long long)D->copies,
                tw_mem_used(d));
        for (int l = 0, n = 0; l < TW_NLAYERS; l++)
            if (D->busy_layer_ns[l])
                fprintf(f, "%s\"%s\":%.9f", n++ ? "," : "", tw_layer_name(l == TW_LAYER_GIVEN_SLOT ? -1 : l),
                        D->busy_layer_ns[l] / 1e9);
        fprintf(f, "}}");
    }
    fprintf(f, "],\"unimplemented\":{");
    struct unimpl_ctx c = {f, 0};
    tw_unimplemented_foreach(unimpl_cb, &c);
    fprintf(f, "}}\n");
    fclose(f);
    return buf;
}

static void live_path(char *out, size_t n) { snprintf(out, n, "%s.%d.live", report_path, (int)getpid()); }

/* A process may end without exiting (vLLM kills its engine core at shutdown): every couple of seconds of
 * real time a snapshot of its report replaces <report>.<pid>.live, which the launcher reads for processes
 * that left no final line. Checked on the launch path once every 4096 operations. */
void tw_report_snapshot_maybe(void) {
    static unsigned counter;
    static int64_t last_ns;
    if (!report_path || !*report_path || (++counter & 4095)) return;
    struct timespec ts;
    tw_real_clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    if (now_ns - last_ns < 2000000000) return;
    last_ns = now_ns;
    tw_charge_pause();   /* the emulator's bookkeeping is not the program's host time */
    size_t len = 0;
    char *line = report_line(tw_now(), 1, &len);
    if (!line) { tw_charge_resume(); return; }
    char path[4096], tmp[4200];
    live_path(path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        ssize_t w = write(fd, line, len);
        close(fd);
        if (w == (ssize_t)len) rename(tmp, path); else unlink(tmp);
    }
    free(line);
    tw_charge_resume();
}

void tw_report_at_exit(void) {
    uint64_t now = tw_now();
    if (tracing) append_trace();
    if (!report_path || !*report_path) return;
    size_t len = 0;
    char *buf = report_line(now, 0, &len);
    if (!buf) return;
    /* one write of the whole line under an advisory lock: several processes append to one report */
    int out = open(report_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (out >= 0) {
        flock(out, LOCK_EX);
        ssize_t w = write(out, buf, len);
        (void)w;
        flock(out, LOCK_UN);
        close(out);
    }
    free(buf);
    char path[4096];
    live_path(path, sizeof path);
    unlink(path);
}
