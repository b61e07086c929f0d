/* The card's power cap: when its work draws more than the cap for long enough an H200 lowers its clock, and
 * its compute-bound kernels take longer than at full clock.
 *
 * The model follows the power the work would draw at full clock. A kernel draws
 *     P = P_IDLE + P_BUSY + P_COMPUTE * u,   u = its compute time at the device's GEMM rate over its duration
 * (0 for kernels without an annotated shape), a copy or memset P_IDLE + P_COPY, an idle card P_IDLE. A
 * first-order filter of that power (time constant TAU_NS) stands for what the card's controller sees. When
 * the filtered power reaches the cap the card is capped; it is released once the filtered power has stayed
 * below the cap for HOLD_NS. While capped, compute-bound kernels are stretched, by FIRST for their first
 * FIRST_NS of capped time and by LATER after that, less near the roofline's ridge (tw_power_draw); a release
 * shorter than FIRST_NS does not start that count again.
 *
 * Measured on the H200 (predictors/data/h200/power_2026-11-30 and -30b, gemm_cool_2026-12-03,
 * vllm_nvml_2026-12-04, vllm_kernels_2026-11-30):
 *   - idle at full clock 122 W (P_IDLE); 1 GiB device-to-device copies back to back 471 W at 1980 MHz, never
 *     capped (P_IDLE + P_COPY);
 *   - back-to-back bf16 GEMMs (u = 1) slow 30-90 ms (median 40) after they start on an idle card, by
 *     1.10-1.14x at first and 1.15-1.20x after about 100 ms; 20 ms of idle leave the clock down, 30 ms
 *     restore it. Given TAU_NS, these set a GEMM loop's power (the filter reaches the cap after 40 ms:
 *     P_IDLE + P_BUSY + P_COMPUTE) and HOLD_NS (released after 25 ms of idle);
 *   - serving: 16 requests decoding (u near 0, the GPU busy ~80% of the time) drew 574 W at most at 1980 MHz;
 *     decode-only steps of 128 requests held the card at the cap for a second (case 4), and steady open-loop
 *     load kept it there (vllm_nvml_2026-12-04): a busy kernel draws well above the copy's 471 W, and P_BUSY
 *     is set high, which the recording allows:
 *   - TAU_NS and P_BUSY: replayed over vLLM's offline recording (python -m timewarp.predictors.power_model),
 *     the model follows the clock the recording's GEMMs ran at (their time over their full-clock rows):
 *     prefills of 512-768 tokens back to back at full clock, capped from 1024-1536, 8192-token steps
 *     1.09-1.11x in the first and 1.15-1.20x after, released by a stretch of small decode steps; TAU_NS 22-33
 *     ms and P_BUSY 349-535 W fit (mean |error| 0.033-0.035 over 140 steps), 25 ms and 535 W are chosen.
 *
 * Rows timed at full clock are stretched: the microbenchmark's (each repetition after a cool-down) and vLLM's
 * in-situ GEMM rows, which vllm_gemm_rows.py brings back to full clock with this model replayed over the
 * recording. Rows flagged `sustained` (measured capped) and the FlashAttention step model are not stretched,
 * but draw their power. A CUDA graph replay draws the power of its nodes averaged over its span, and its
 * stretchable nodes' time is stretched (a trace shows the stretch on those nodes: graph.c, tw_graph_exec_trace).
 *
 * Other devices get the H200's model. On an H100 (predictors/data/h100/power_2026-12-06) the same experiments
 * slowed 0.5-2 points less over each (a 3 s GEMM loop 1.175x against 1.196x) with onsets alike; the A100 and
 * B200 (400 and 1000 W) are not measured.
 *
 * On by default; TIMEWARP_POWER=0 turns it off (every kernel at full clock). */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include "internal.h"
#include "graph_internal.h"

/* predictors/power_model.py reads these definitions: keep one per line, value in the second field. Powers in
 * W on an H200 (700 W limit). */
#define P_IDLE 122.0
#define P_BUSY 535.0            /* over idle, for any kernel */
#define P_COPY 349.0            /* over idle, for a copy or memset */
#define P_COMPUTE 189.0         /* more at full use of the tensor cores (a GEMM loop: 846 W in all) */
#define P_CAP 700.0
#define HOLD_NS 19400000.0
#define TAU_NS 25000000.0
#define FIRST_NS 60000000.0     /* ns */
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

/* The power an operation draws at full clock over an idle card's (W; dur its duration there; 0 for what is
 * neither a kernel nor a copy or memset), and into *share how much of its time the cap stretches: 0 unless
 * it is compute-bound (its compute time above its
 * memory time, both at the device's rates: tw_annotated_times), all of it once its compute time is twice its
 * memory time or more, and in proportion between: near the roofline's ridge the clock matters less (a
 * 4096x4096 GEMM of 256 tokens, compute 1.24x its memory time, took the same time capped and not in vLLM's
 * recording; 28672x4096 at 256 tokens, 1.3x, took 1.08x; both at 512 tokens, 2.2-2.5x, 1.11-1.25x). */
double tw_power_draw(const tw_gpu_spec *s, const tw_op *op, uint64_t dur, double *share) {
    double tc, tm, u = 0;
    *share = 0;
    if (op->kind == TW_OP_MEMCPY || op->kind == TW_OP_MEMSET) return P_COPY;
    if (op->kind != TW_OP_KERNEL) return 0;
    if (tw_annotated_times(s, op, &tc, &tm)) {
        if (dur) u = tc * 1e9 / (double)dur;
        if (u > 1) u = 1;
        if (tc > tm) *share = tm <= 0 || tc >= 2 * tm ? 1 : tc / tm - 1;
    }
    return P_BUSY + P_COMPUTE * u;
}

/* The filter over [t0, t1] toward `target`; notes when it falls below the cap */
static void filter(tw_device_state *D, double target, uint64_t t0, uint64_t t1) {
    double p0 = D->pw_power;
    D->pw_power = target + (p0 - target) * exp(-(double)(t1 - t0) / TAU_NS);
    if (D->pw_power >= P_CAP) D->pw_below = -1;
    else if (p0 >= P_CAP) D->pw_below = (double)t0 + TAU_NS * log((p0 - target) / (P_CAP - target));
}

uint64_t tw_power_stretch(int dev, const tw_op *op, uint64_t start, uint64_t dur) {
    if (!tw_power_enabled() || dev < 0 || dev >= TW_MAX_DEVICES || !tw_devices[dev].spec || !dur) return dur;
    tw_device_state *D = &tw_devices[dev];
    uint64_t hot, stretchable;
    double p;
    if (op->kind == TW_OP_KERNEL || op->kind == TW_OP_MEMCPY || op->kind == TW_OP_MEMSET) {
        double share;
        p = P_IDLE + tw_power_draw(D->spec, op, dur, &share);
        hot = share > 0 ? dur : 0;
        stretchable = hot && tw_power_stretchable(op) ? (uint64_t)((double)dur * share) : 0;
    } else if (op->kind == TW_OP_GRAPH && op->exec) {
        tw_graph_exec_hot(op->exec, &hot, &stretchable, &p);
        p += P_IDLE;
    } else {
        return dur;
    }
    if (!D->pw_t) { D->pw_power = P_IDLE; D->pw_below = D->pw_released = -1; D->pw_t = start; }
    if (start > D->pw_t) {                          /* idle since the device's last work */
        filter(D, P_IDLE, D->pw_t, start);
        D->pw_t = start;
    }
    if (D->pw_capped && D->pw_below >= 0 && (double)start - D->pw_below >= HOLD_NS) {
        D->pw_capped = 0;
        D->pw_released = (double)start;
    }
    double capped_part = 0;                         /* share of the op's time spent capped */
    if (D->pw_capped) {
        capped_part = 1;
    } else if (p > P_CAP) {                         /* does the filter reach the cap within this op? */
        double t = D->pw_power >= P_CAP ? 0 : TAU_NS * log((p - D->pw_power) / (p - P_CAP));
        if (t < (double)dur) {
            D->pw_capped = 1;
            capped_part = 1 - t / (double)dur;
            /* a fresh onset, unless a short release left the clock where it was */
            if (D->pw_released < 0 || (double)start + t - D->pw_released >= FIRST_NS) D->pw_capped_ns = 0;
        }
    }
    uint64_t out = dur;
    if (capped_part > 0 && hot) {
        double f = D->pw_capped_ns < FIRST_NS ? FIRST : LATER;
        out += (uint64_t)((double)stretchable * capped_part * (f - 1.0));
        D->pw_capped_ns += (double)hot * capped_part;
    }
    uint64_t end = start + out;
    if (end > D->pw_t) {                            /* overlapping work on other streams counts once */
        filter(D, p, start > D->pw_t ? start : D->pw_t, end);
        D->pw_t = end;
    }
    return out;
}
