/* The card's power cap: under sustained compute-bound work an H200 lowers its clock, and its GEMMs take
 * longer than at full clock.
 *
 * Measured on the H200 (predictors/data/h200/power_2026-11-30, -30b and gemm_cool_2026-12-03's power_third.json;
 * every GEMM timed with its own events, predictors/calibration/power_dynamics.py): 30-90 ms (median 45) after
 * compute-bound work begins the card slows, by 1.10-1.14x at first and 1.15-1.20x after about 100 ms, whatever
 * the duty cycle; idle gaps of 20 ms do not restore the clock, 25 ms do at times, 30 ms and more do (also when
 * the gap is filled with memory-bound copies or launch-bound adds); the same holds for a whole Llama layer at
 * 8192 tokens (1.08-1.15x); memory-bound copies are not slowed. The model: a run of compute-bound work starts
 * at the first such kernel after more than RESET_NS without one; kernels that start ONSET_NS or later into the
 * run's busy time (its compute-bound work, idle gaps shorter than RESET_NS not counted: power_ramp.json of
 * sdpa_cool_2026-12-03, 21 ms of GEMMs then 20 ms idle or busy with memory-bound adds, then more GEMMs at full
 * clock) are stretched, by FIRST for FIRST_NS and by LATER after that.
 *
 * Rows measured inside sustained runs (vLLM's in-situ GEMMs, flagged `sustained` by profile.c) and the
 * FlashAttention step model already carry the slowdown and are not stretched. The microbenchmark's GEMM and
 * attention rows (gemm_cool_2026-12-03, sdpa_cool_2026-12-03) were timed at full clock (each repetition after
 * a 150 ms cool-down) and are. A CUDA graph replay counts as compute-bound work when it holds such nodes, and
 * its stretchable nodes' time is stretched (in a trace, its nodes keep their unstretched places).
 *
 * On by default; TIMEWARP_POWER=0 turns it off (every kernel at full clock). */
#define _GNU_SOURCE
#include <stdlib.h>
#include "internal.h"
#include "graph_internal.h"

#define ONSET_NS 40000000ull     /* 30-90 ms measured, median 45 */
#define RESET_NS 25000000ull     /* 20 ms of idle did not restore the clock, 30 ms did */
#define FIRST_NS 60000000ull
#define FIRST 1.12
#define LATER 1.16

int tw_power_enabled(void) {
    static int enabled = -1;
    if (enabled < 0) { const char *e = getenv("TIMEWARP_POWER"); enabled = !(e && e[0] == '0'); }
    return enabled;
}

int tw_power_stretchable(const tw_op *op) {
    return !(op->layer == TW_LAYER_STEP || op->layer < 0 || (op->layer & TW_LAYER_SUSTAINED));
}

uint64_t tw_power_stretch(int dev, const tw_op *op, uint64_t start, uint64_t dur) {
    if (!tw_power_enabled() || dev < 0 || dev >= TW_MAX_DEVICES || !tw_devices[dev].spec) return dur;
    tw_device_state *D = &tw_devices[dev];
    uint64_t hot, stretchable;
    if (op->kind == TW_OP_KERNEL) {
        if (!tw_compute_bound(D->spec, op)) return dur;
        hot = dur;
        stretchable = tw_power_stretchable(op) ? dur : 0;
    } else if (op->kind == TW_OP_GRAPH && op->exec) {
        tw_graph_exec_hot(op->exec, &hot, &stretchable);   /* a replay counts as one stretch of work */
        if (!hot) return dur;
    } else {
        return dur;
    }
    if (!D->hot_until || start > D->hot_until + RESET_NS) D->hot_busy = 0;   /* a new run */
    uint64_t into = D->hot_busy;   /* busy, not wall, time: 21 ms of GEMMs, 20 ms idle, 7 ms more ran at full clock */
    D->hot_busy += hot;
    if (into >= ONSET_NS) dur += (uint64_t)(stretchable * ((into < ONSET_NS + FIRST_NS ? FIRST : LATER) - 1.0));
    if (start + dur > D->hot_until) D->hot_until = start + dur;
    return dur;
}
