/* Private to the core: the shared lock, per-device state and helpers between core files. */
#ifndef TW_CORE_INTERNAL_H
#define TW_CORE_INTERNAL_H
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include "tw/core.h"

#define TW_MAX_DEVICES 64

/* One lock for streams, events, graphs and memory: uncontended in the common single-threaded launch path. */
extern pthread_mutex_t tw_lock;
#define TW_LOCK() pthread_mutex_lock(&tw_lock)
#define TW_UNLOCK() pthread_mutex_unlock(&tw_lock)

/* Predictor layers as slots of a device's busy-time split: the layers of tw_predict_ex (TW_LAYER_*, graph
 * replays split into their nodes' layers) and one for durations given by the caller (collectives' peers,
 * host functions). */
#define TW_NLAYERS 9
#define TW_LAYER_GIVEN_SLOT 8
static inline int tw_layer_slot(int layer) {
    if (layer < 0) return TW_LAYER_GIVEN_SLOT;
    layer &= 0xff;
    return layer < TW_LAYER_GIVEN_SLOT ? layer : TW_LAYER_GIVEN_SLOT;
}

typedef struct tw_device_state {
    const tw_gpu_spec *spec;
    int physical;                    /* index on the virtual box (what NVML numbers), after CUDA_VISIBLE_DEVICES */
    struct tw_stream *legacy;        /* the legacy default stream */
    uint64_t blocking_tail;          /* completion of the last op on any blocking stream (legacy ordering) */
    uint64_t max_tail;               /* completion of the last op on any stream */
    uint64_t busy_ns, kernels, copies;
    uint64_t busy_layer_ns[TW_NLAYERS];   /* busy time by the predictor layer that timed it (tw_layer_slot) */
    uint64_t queued;                 /* operations that took a launch-queue slot (stream.c) */
    /* the power cap (power.c): the filtered power at full clock (W) as of pw_t (0: no work yet), whether
     * capped, the compute-bound time run capped so far, since when the filter is below the cap and when the
     * cap was last released (ns; -1: not) */
    double pw_power, pw_capped_ns, pw_below, pw_released;
    uint64_t pw_t;
    int pw_capped;
} tw_device_state;

/* vclock.c: this process's timeline (the clock its threads share) and a push of it; gil.c: the record of
 * where that timeline jumped over a wait (idle, Python's GIL free) */
uint64_t tw_clock_process_time(void);
double tw_clock_cpu_factor(void);
uint64_t tw_clock_native_cpu_ns(void);
void tw_clock_process_push(uint64_t d);
void tw_gil_note_idle(uint64_t from, uint64_t to);
int tw_gil_modelled_thread(void);   /* gil.c: the calling thread's GIL waits are modelled */
int tw_clock_on_timeline(void);     /* vclock.c: the calling thread reads its process's shared clock */

/* charge_log.c: running totals of what this process's CPU was charged (TIMEWARP_CHARGE_DIR), or NULL */
enum tw_charge_field { TW_CHARGE_HOST_PY, TW_CHARGE_VIRT_PY, TW_CHARGE_HOST_NATIVE, TW_CHARGE_VIRT_NATIVE,
                       TW_CHARGE_ADDED, TW_CHARGE_RAW, TW_CHARGE_HOST_KERNEL, TW_CHARGE_VIRT_KERNEL,
                       TW_CHARGE_FIELDS };
extern _Atomic uint64_t *tw_charge_tab;
static inline void tw_charge_count(int f, uint64_t ns) {
    if (__builtin_expect(tw_charge_tab != NULL, 0) && ns)
        atomic_fetch_add_explicit(&tw_charge_tab[f], ns, memory_order_relaxed);
}

/* blas_lazy.c: what cuBLAS does on the host before a GEMM's kernel (its first-use load, waiting for the
 * device; the memset of stream-K kernels, split-K's reduction); called by tw_enqueue for GEMM operations */
void tw_blas_before_gemm(struct tw_stream *s, const tw_op *op);
/* the profile's blaskern lines (profile.c): which kernel(s) a measured shape runs over a range of n */
void tw_blas_table_add(int64_t m, int64_t k, int64_t n0, int64_t n1, int kid, int kid2, int memset_first);
void tw_blas_table_clear(void);

/* power.c: op's duration on device dev when it starts at start, stretched where the power cap slows the card
 * (kernels and graph replays); whether a predicted op's time may be stretched (measured at full clock) */
uint64_t tw_power_stretch(int dev, const tw_op *op, uint64_t start, uint64_t dur);
int tw_power_stretchable(const tw_op *op);
double tw_power_draw(const tw_gpu_spec *s, const tw_op *op, uint64_t dur, double *share);
int tw_power_enabled(void);   /* on unless TIMEWARP_POWER=0 */

extern tw_device_state tw_devices[TW_MAX_DEVICES];
extern int tw_ndevices;
extern int tw_nphysical;
extern int tw_initialized;

/* the real clock_gettime (vDSO), resolved once; core code never calls the interposed one */
int tw_real_clock_gettime(clockid_t id, struct timespec *ts);
uint64_t tw_thread_cpu_ns(void);

void tw_memory_init(void);
void tw_streams_init(void);
void tw_trace_init(void);
void tw_report_at_exit(void);
void tw_report_snapshot_maybe(void);
/* run host functions whose virtual time has come (called after host waits) */
void tw_hostfn_worker_start(void);
void tw_hostfn_submit(void (*fn)(void *), void *data, uint64_t at);
void tw_hostfn_drain(uint64_t t);   /* until the callbacks due by virtual time t have run */
/* counts of unimplemented calls, for the report */
void tw_unimplemented_foreach(void (*cb)(const char *lib, const char *name, long count, void *ctx), void *ctx);
const char *tw_env(const char *name, const char *dflt);
#endif
