/* The card's power cap: under sustained compute-bound work an H200 lowers its clock, and its GEMMs take
 * longer than at full clock.
 *
 * Measured on the H200 (predictors/data/h200/power_2026-11-30 and -30b; every GEMM timed with its own events,
 * predictors/calibration/power_dynamics.py): 30-60 ms after compute-bound work begins the card slows, by
 * 1.10-1.14x at first and 1.15-1.20x after about 100 ms; the same happens at duty cycles of 30, 60 and 82%
 * (bursts separated by 20-25 ms idle gaps, which do not restore the clock), and to a whole Llama layer at
 * 8192 tokens (1.08-1.15x); an idle gap of 100 ms or more restores the full clock; memory-bound copies are
 * not slowed. The model: a run of compute-bound work starts at the first such kernel after a gap of more
 * than RESET_NS without one; kernels that start ONSET_NS or later into the run are stretched, by FIRST for
 * FIRST_NS and by LATER after that.
 *
 * Rows measured inside sustained runs (vLLM's in-situ GEMMs, flagged `sustained` by profile.c) and the
 * FlashAttention step model already carry the slowdown and are not stretched. A CUDA graph replay counts as compute-bound work when it holds such nodes, and its stretchable
 * nodes' time is stretched (in a trace, its nodes keep their unstretched places).
 *
 * Off unless TIMEWARP_POWER=1: the microbenchmark lease whose GEMM rows the profile holds was itself capped
 * during its GEMM section (nvidia-smi after it: 1785 MHz, 595 W, reason SW power cap), so its rows carry part
 * of the slowdown, and stretching them again made the held-out GEMM rows of `timewarp validate` 8.0% / 20.8%
 * (median / p90) instead of 4.3% / 13.2%; long back-to-back GEMM loops (the power leases) are capped more
 * deeply than those rows show, and gain from it (a 1 s loop: -14.9% off, -1.7% on). */
#define _GNU_SOURCE
#include <stdlib.h>
#include "internal.h"
#include "graph_internal.h"

#define ONSET_NS 40000000ull     /* 30-60 ms measured */
#define RESET_NS 60000000ull     /* 25 ms of idle did not restore the clock, 100 ms did */
#define FIRST_NS 60000000ull
#define FIRST 1.12
#define LATER 1.16

int tw_power_enabled(void) {
    static int enabled = -1;
    if (enabled < 0) { const char *e = getenv("TIMEWARP_POWER"); enabled = e && e[0] == '1'; }
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
    if (!D->hot_since || start > D->hot_until + RESET_NS) D->hot_since = start;
    uint64_t into = start - D->hot_since;
    if (into >= ONSET_NS) dur += (uint64_t)(stretchable * ((into < ONSET_NS + FIRST_NS ? FIRST : LATER) - 1.0));
    if (start + dur > D->hot_until) D->hot_until = start + dur;
    return dur;
}
