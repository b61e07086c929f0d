/* The time keeper's shared state: one virtual clock for every process of a run.
 *
 * The coordinator (coordinator/, in the `timewarp run` process) creates a file in /dev/shm holding this
 * layout and names it in TIMEWARP_CLOCK; every emulated process maps it at start-up. It holds:
 * - the run's virtual epoch (every process reads time from the same origin);
 * - `max_now`: the highest virtual time any thread has reached (a Lamport clock: a thread that wakes
 *   because another acted starts no earlier than that);
 * - `safe`: the time keeper's clock, the earliest time at which any thread of any process could still act
 *   (the minimum over running threads' clocks and waiting threads' deadlines). A thread waiting for virtual
 *   time t (a sleep, a timed-out wait, a GPU completion) proceeds once safe >= t: the clock jumps only when
 *   no thread can act earlier;
 * - one slot per thread that has read the clock or waited: its state, clock and deadline;
 * - the collective rendezvous table (NCCL across processes);
 * - the abort flag: a participant died; waiting threads return an error instead of hanging;
 * - the host pace: per CPU of this machine, what one CPU second there is worth on the target's host right
 *   now (coordinator/pace.py measures it; this machine's CPU speed changes with its neighbours' load);
 * - message stamps: per channel (one direction of a socket, pipe or eventfd; shim_c/libc/message.c keys
 *   them), the virtual time of its latest write, so that a reader woken by it resumes at that time.
 *
 * Slot states: RUN (running; its clock is its last reading, or the keeper's extrapolation by its CPU time),
 * SLEEP (only time wakes it: sleeps and GPU waits, until `deadline`), TWAIT (a wait with a deadline that an
 * event can end early), BLOCK (a wait without deadline), LOST (the keeper saw it blocked in a call the shim
 * does not know; it counts as BLOCK until its next reading).
 *
 * Shared by libtimewarp.so (core/timekeeper.c, core/tk_shared.c) and the keeper library the coordinator
 * loads (keeper/keeper.c, core/tk_shared.c). Nothing here may depend on the rest of the core.
 */
#ifndef TW_TIMEKEEPER_H
#define TW_TIMEKEEPER_H
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TW_TK_MAGIC 0x316b63776b747774ull /* "twtkwck1" */
#define TW_TK_VERSION 6
#define TW_TK_SLOTS 2048
#define TW_TK_COLLS 256
#define TW_TK_MAX_RANKS 64
#define TW_TK_PACE_CPUS 256
#define TW_TK_MSGS 8192
#define TW_TK_PENDS 256

/* slot flags */
#define TW_SLOT_FEEDER 1u   /* an own-clock thread that hands its process data through memory (tw_clock_feeder_thread) */
#define TW_SLOT_OWN 2u      /* a thread whose clock is its own (tw_clock_io_thread): not on its process's timeline */
#define TW_SLOT_PAUSED 4u   /* its CPU is not charged now (tw_charge_pause): the keeper must not extrapolate it */

enum { TW_SLOT_FREE = 0, TW_SLOT_RUN = 1, TW_SLOT_SLEEP = 2, TW_SLOT_TWAIT = 3, TW_SLOT_BLOCK = 4, TW_SLOT_LOST = 5 };

typedef struct tw_tk_slot {
    int32_t tid;            /* 0: free */
    int32_t pid;
    uint32_t state;
    uint32_t flags;
    uint64_t clock;         /* virtual time at the thread's last reading */
    uint64_t deadline;      /* SLEEP / TWAIT: virtual time it waits for */
    uint64_t cpu;           /* the thread's CPU time (ns) at that reading, for the keeper's extrapolation */
    uint64_t seq;           /* bumped at every reading and state change */
    uint64_t ext;           /* the keeper's extrapolation of a running thread's clock (0: none) */
    uint64_t pad;
} tw_tk_slot;               /* 64 bytes: one cache line */

/* A collective (or a send/recv pair, or a communicator's creation) being matched across ranks. */
enum { TW_COLL_FREE = 0, TW_COLL_OPEN = 1, TW_COLL_DONE = 2 };
typedef struct tw_tk_coll {
    uint64_t key;           /* communicator id mixed with the operation's sequence number (0: free) */
    uint32_t state;
    uint32_t nranks;
    uint32_t arrived;       /* ranks that posted */
    uint32_t left;          /* ranks that read the result */
    int32_t kind;
    int32_t pad;
    uint64_t end;           /* completion time, once all arrived */
    int32_t pid[TW_TK_MAX_RANKS];
    uint64_t arrival[TW_TK_MAX_RANKS];   /* when each rank's operation could start */
    int64_t bytes[TW_TK_MAX_RANKS];      /* each rank's argument: buffer bytes, or a split's color/key */
    int32_t gpu[TW_TK_MAX_RANKS];        /* each rank's physical GPU on the virtual cluster */
} tw_tk_coll;

/* One direction of a channel and the virtual time of its latest write (open addressing on key; 0: free). */
typedef struct tw_tk_msg {
    uint64_t key;
    uint64_t stamp;         /* the latest write's virtual time + 1 (0: none yet) */
    uint64_t first;         /* the earliest write's since the reader last saw the channel, + 1 (0: none) */
    uint64_t reader;        /* the thread that last saw it: slot index + 1 in the low 32 bits, tid above (0: none) */
} tw_tk_msg;

/* A message written and not yet seen by its reader: until real time `until`, the keeper's clock may not
 * pass its stamp (the reader, about to wake in real time, will act at that virtual time). Past `until`, the
 * hold goes on while the channel's last reader is woken and not yet running (tk_shared.c, reader_woken). */
typedef struct tw_tk_pend {
    uint64_t key;           /* 0: free */
    uint64_t stamp;
    int64_t until;          /* real CLOCK_MONOTONIC ns */
    int64_t born;           /* real ns when the hold began */
    uint64_t reader;        /* the channel's last reader when the hold began (tw_tk_msg.reader) */
    uint64_t pad[3];
} tw_tk_pend;

typedef struct tw_tk_shared {
    uint64_t magic;
    uint32_t version, nslots;
    int64_t epoch_realtime, epoch_monotonic;   /* wall clocks at virtual time 0 */
    uint64_t max_now;        /* Lamport clock: the highest time any thread reached */
    uint64_t safe;           /* the time keeper's clock */
    uint32_t gen;            /* futex word: bumped when `safe` advances, a collective completes, or on abort */
    uint32_t sleepers;       /* threads waiting on `gen` */
    uint32_t hiwater;        /* slots [0, hiwater) may be in use */
    uint32_t keeper_pid;
    uint64_t keeper_beat;    /* real ns (CLOCK_MONOTONIC) of the keeper's last pass: the coordinator is alive */
    uint32_t aborted;
    uint32_t coll_lock;      /* spin lock of the collective table (held for a few instructions) */
    uint64_t jumps;          /* times `safe` moved to a deadline with no thread running (statistics) */
    uint64_t changes;        /* bumped at every slot state change: a jump waits until this settles */
    char abort_reason[512];
    char topology[1024];     /* the cluster description (TIMEWARP_TOPOLOGY format) */
    uint32_t pace_on;        /* 1: charge CPU time by pace_milli (the pace probe runs), 0: by the static factor */
    uint32_t holds_expired;  /* message holds that ran out unseen (statistics: a reader ran late, or read without a wait) */
    /* per CPU: target-host ns per 1000 ns of CPU time here (0: not measured yet, use the mean of the others) */
    uint32_t pace_milli[TW_TK_PACE_CPUS];
    uint32_t pace_mean;      /* the mean over measured CPUs (the fallback) */
    /* the same for native code (a tokenizer's Rust, priced apart: coordinator/pace.py's native probe) */
    uint32_t native_on;
    uint32_t native_milli[TW_TK_PACE_CPUS];
    uint32_t native_mean;
    uint32_t npend;          /* entries of `pends` in use */
    tw_tk_coll colls[TW_TK_COLLS];
    tw_tk_slot slots[TW_TK_SLOTS];
    tw_tk_msg msgs[TW_TK_MSGS];
    tw_tk_pend pends[TW_TK_PENDS];
} tw_tk_shared;

/* ---- tk_shared.c: operations on the shared state, for the core and the keeper alike */
size_t tw_tk_size(void);
/* Create (O_EXCL) and initialise the file at path; returns the mapping or NULL (errno set). */
tw_tk_shared *tw_tk_create(const char *path, int64_t epoch_realtime, int64_t epoch_monotonic);
/* Map an existing file; NULL with *why set when it is missing or not a time keeper file. */
tw_tk_shared *tw_tk_map(const char *path, const char **why);
/* Take the slot of thread tid (the one it already has, or a free one); NULL when the table is full. */
tw_tk_slot *tw_tk_find(tw_tk_shared *k, int32_t tid);   /* the slot thread tid holds, or NULL */
tw_tk_slot *tw_tk_claim(tw_tk_shared *k, int32_t pid, int32_t tid, uint64_t clock);
void tw_tk_release(tw_tk_shared *k, tw_tk_slot *s);
/* Raise `max_now` to at least t; returns the new value. */
uint64_t tw_tk_publish(tw_tk_shared *k, uint64_t t);
/* Move `safe` as far as it may go (the minimum over running clocks and waiting deadlines) and wake the
 * waiters; returns `safe`. */
uint64_t tw_tk_advance(tw_tk_shared *k);
/* The same short of a jump (the minimum is a waiting deadline): that is left to the waiters, whom it wakes. */
uint64_t tw_tk_advance_no_jump(tw_tk_shared *k);
/* tw_tk_advance for a thread in a wait of its own: once the table has settled, and before the clock jumps,
 * look(ctx) makes the wait's own real look (a poll with no timeout); what it finds (nonzero) ends the
 * advance without the jump. */
uint64_t tw_tk_advance_look(tw_tk_shared *k, int (*look)(void *), void *ctx);
uint64_t tw_tk_others_lo(tw_tk_shared *k, int32_t pid);
/* The same, counting also pid's feeder threads (TW_SLOT_FEEDER), a feeder waiting with a deadline at its
 * clock (a lock its process holds, Python's GIL, may end the wait at once): what a thread of pid may still
 * be handed before then, through memory by a feeder or by message from elsewhere. */
uint64_t tw_tk_inputs_lo(tw_tk_shared *k, int32_t pid);
void tw_tk_describe_inputs_lo(tw_tk_shared *k, int32_t pid, char *buf, size_t n);
const char *tw_tk_state_name(uint32_t state);   /* a slot state's name (the keeper's status, diagnostics) */
/* Whether a thread on pid's own timeline (not TW_SLOT_OWN) runs, or waits for a deadline at or before t: the
 * process may still act at or before t (shim_c/core/gil.c). *run_hi: the highest clock of its running ones
 * (their last reading, or the keeper's extrapolation of a long computation), 0 if none runs. */
int tw_tk_process_acts_by(tw_tk_shared *k, int32_t pid, uint64_t t, uint64_t *run_hi);
/* Wait (slot s asleep at t) until no thread of another process can act before t (tw_tk_others_lo). */
int tw_tk_wait_others(tw_tk_slot *s, uint64_t t);
/* Wait (slot s asleep at t) until tw_tk_inputs_lo reaches t, at most max_real_ns of real time: 0 done, 1 the
 * cap ran out, -1 aborted. */
int tw_tk_wait_inputs(tw_tk_slot *s, uint64_t t, int64_t max_real_ns);
/* Wake every thread waiting on `gen` (a collective completed, an abort). */
void tw_tk_wake_all(tw_tk_shared *k);
/* Wait on `gen` while it still equals seen, at most timeout_ns of real time. */
void tw_tk_futex_wait(tw_tk_shared *k, uint32_t seen, int64_t timeout_ns);
void tw_tk_abort(tw_tk_shared *k, const char *reason);
/* Real CLOCK_MONOTONIC in ns (never the virtual one). */
int64_t tw_tk_real_ns(void);
/* The state letter /proc gives a thread (tid > 0) or a process (tid 0): R, S, D, T, t, Z, ...; '\0' when it
 * no longer exists. */
char tw_tk_task_state(int32_t pid, int32_t tid);
/* What one ns of CPU time on cpu is worth on the virtual clock: the pace when the probe runs, else dflt. */
double tw_tk_pace(tw_tk_shared *k, int cpu, double dflt);
/* The same for native code (the native probe's pace), dflt where that is not measured. */
double tw_tk_native_pace(tw_tk_shared *k, int cpu, double dflt);
/* Message stamps: raise channel key's stamp to t (its writer's time); the latest write's time on key, or
 * 0 when none was seen (or the table is full). */
void tw_tk_msg_stamp(tw_tk_shared *k, uint64_t key, uint64_t t);
uint64_t tw_tk_msg_time(tw_tk_shared *k, uint64_t key, int *found);
/* The earliest write's time since the reader last saw key (tw_tk_msg_seen); 0 with *found = 0 if none. */
uint64_t tw_tk_msg_first(tw_tk_shared *k, uint64_t key, int *found);
/* A message on key at virtual time t holds the keeper's clock until its reader sees it, or until real time
 * `until`; tw_tk_msg_seen: the reader saw what key carried. */
void tw_tk_msg_hold(tw_tk_shared *k, uint64_t key, uint64_t t, int64_t until);
void tw_tk_msg_seen(tw_tk_shared *k, uint64_t key, const tw_tk_slot *reader);
/* reader is about to wait to read key: its entry names it (created without a stamp where there is none) */
void tw_tk_msg_watch(tw_tk_shared *k, uint64_t key, const tw_tk_slot *reader);
void tw_tk_coll_lock(tw_tk_shared *k);
void tw_tk_coll_unlock(tw_tk_shared *k);

/* ---- timekeeper.c and vclock.c: this process's side (libtimewarp.so only) */
/* how a wait ended (vclock.c: tw_tk_wake) */
enum { TW_WAKE_TIMEOUT = 0, TW_WAKE_ANY = 1, TW_WAKE_LOCAL = 2, TW_WAKE_AT = 3 };
extern tw_tk_shared *tw_tk;    /* NULL: no time keeper, process-local time */
void tw_tk_attach(int64_t *epoch_realtime, int64_t *epoch_monotonic);
tw_tk_slot *tw_tk_thread_slot(uint64_t now);   /* the calling thread's slot, claimed on first use */
uint64_t tw_tk_start_clock(void);              /* where a new process's timeline starts */
void tw_tk_msg_sent(uint64_t key, int hold);   /* this thread writes on channel key now (hold: see pends) */
int tw_tk_msg_at(uint64_t key, uint64_t *t);   /* 1 and *t: the latest write on key (now seen); 0: none known */
void tw_tk_msg_reader(uint64_t key);           /* this thread is about to wait to read channel key */
void tw_tk_reader_running(void);               /* vclock.c: a woken reader marks its slot running before it takes a message */
int tw_tk_reserve(void);                       /* pthread_create's slot for the new thread (-1: none) */
void tw_tk_adopt(int slot);                    /* the new thread takes it */
void tw_tk_unreserve(int slot);                /* the creation failed: give it back */
void tw_tk_thread_private(void);               /* this thread stays out of the keeper (host-function thread) */
void tw_tk_before_exec(void);
/* Put slot s in state (SLEEP or TWAIT) with deadline t and wait until the keeper's clock reaches t;
 * -1 when the run was aborted or the coordinator is gone. */
int tw_tk_wait_safe(tw_tk_slot *s, uint64_t t, uint32_t state);
/* Whether the keeper's clock has reached t (advancing it if it can; jumping it to a deadline too if may_jump:
 * not for a thread that holds a lock others may need, vclock.c/wait.c). */
int tw_tk_due(uint64_t t, int may_jump);
/* tw_tk_due(t, 1) for a wait whose own look (tw_tk_advance_look) may end it before a jump */
int tw_tk_due_look(uint64_t t, int (*look)(void *), void *ctx);

#ifdef __cplusplus
}
#endif
#endif
