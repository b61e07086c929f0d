/* The step context: what a serving integration says about the batch being run, and the attention model
 * that uses it.
 *
 * vLLM's FlashAttention 3 kernels run with a persistent grid, and a full CUDA graph replays the same
 * launch for every batch of a size: neither the launch nor the graph says how much attention work a step
 * has. The integration (integrations/vllm_plugin/step_context.py) publishes each request's query and
 * context length before the step's kernels are launched; the main attention kernel is then timed as
 *     t = t0 + per_tile * tiles + flops / (eff_c * peak) + bytes / (eff_m * bandwidth)
 * with flops = 4 * heads * head_dim * sum over requests of the (causal) query-key pairs, bytes the K/V
 * read once per request plus Q and O (K, V and Q at the KV cache's element size: fp8 halves them,
 * tw_step_set_kv_elem), and tiles FA3's work tiles: per request and KV head, the query rows
 * of its head group (GQA-packed, q_i * heads / kv_heads) in blocks of 128. Compute and memory time add
 * rather than overlap (max): a step mixes compute-bound prefill tiles and memory-bound decode tiles, and the
 * persistent kernel spends the sum on them (vLLM 0.24's FA3 on the H200: with max() the mixed batches of
 * vllm_attention_bench.py keep 11-18% median error, with the sum 3%). The per-tile cost (~22 ns in vLLM's
 * recording, 14 in the microbenchmark: a tile's prologue/epilogue spread over the SMs) is what makes many
 * short prefills slower than their FLOPs. A decode step (every request one query token: 8 tiles each, one
 * per KV head) has its own per-tile cost, fitted on vLLM serving (predictors/fit_attention.py, stage 4):
 * there a decode tile's fixed cost hides behind the K/V stream of the others (about 5 ns), and with the
 * prompts' per-tile cost FA3 came out 8-15% high at 32-160 decoding requests (contexts of 640-1584); at
 * short contexts it does not hide, and those tiles keep the prompts' cost (DECODE_FULL_BLOCKS, below).
 * Steps with a prompt keep the one cost: in serving they came out -6% with it, -13% with their decodes at
 * the decode cost.
 * t0, eff_c, eff_m and the two tile costs are fitted on the real H200 (FA3 inside a recorded vLLM run and in
 * `vllm serve`, and predictors/calibration/vllm_attention_bench.py; predictors/fit_attention.py -> the
 * "attnstep <t0_ns> <eff_c> <eff_m> <per_tile_ns> <per_decode_tile_ns>" profile row). Without a fitted row
 * the efficiencies default to the roofline's 0.6 / 1.0, t0 to the launch floor and per_tile to 0, at the
 * device's own rates.
 *
 * Another GPU takes the time on the card the row was fitted on, moved by its shares as profile.c moves a
 * measured time (tw_transfer_split): the memory term's share of it with the bandwidth ratio, the compute
 * term's with the tensor rate's, the rest with SMs x clock, added as fourth powers. Until 2026-12-06 the
 * terms took the other card's rates directly (a sum, every term at full weight), and on the real H100 FA3
 * came out 11% high in decode steps of 64 requests (the profiler traces of case 3, vllm_2026-12-06b: 2.02 ms
 * per step real, 2.25 emulated; the H200's trace 1.70, so the H100 ran it 1.19x, where the bandwidths give
 * 1.44x and the sum 1.34x) and 15% high in case 4's 8192-token steps of 2048-token prompts beside up to 124
 * decodes (vllm_2026-12-06a: 19.9 ms per step real, 22.8 emulated, 18.8 on the emulated H200). Shares as
 * fourth powers give 2.03 and 19.8 ms (1.21x and 1.06x the emulated H200; squares about 1.27x in the decode
 * step): the persistent kernel overlaps the decode tiles' K/V stream with its other work, on the slower
 * memory more than the sum says. (In serving the H100's decode steps then came out -2.5% on average against
 * six servers, whose boards differ by up to 3.7% in a decode step; docs/LIMITATIONS.md.) */
#define _GNU_SOURCE
#include <math.h>
#include <stdatomic.h>
#include <string.h>
#include "internal.h"

#define TRANSFER_P_STEP 4.0   /* the shares' power on another card (above) */

/* A decode tile whose request has a short context pays the prompts' per-tile cost: its fixed cost has too
 * little K/V stream to hide behind. The serving decode cost (5.1 ns) was fitted on contexts of 640-1584;
 * decode steps at shorter contexts came out short by about the difference (21.8 - 5.1 ns per tile) against the
 * real H200 servers' timelines (predictors/compare_decode_spans.py, fifty-second session: 255-256 requests at
 * 256-384 tokens -7.8 to -8.8%, 128 at 256-512 -7.0%, 48 at 256-320 -3.7%, 96 at 512-640 -2.0%, 64 at 512-768
 * -1.9%; with it +1.4, -1.5, -0.3, -2.2, -2.0%, and held-out cases at 128-608 tokens -8.0..-1.8% -> -1.4..+3.8%).
 * In KV blocks of 128 tokens: up to DECODE_FULL_BLOCKS the full cost, from DECODE_FREE_BLOCKS the decode
 * cost, linear between (4 blocks: half). Chosen on those five cases; predictors/fit_attention.py mirrors it. */
#define DECODE_FULL_BLOCKS 3
#define DECODE_FREE_BLOCKS 5

/* FA3's last partial wave in a decode step. FA3's prepare kernel splits each request's K/V among CTAs: with
 * n_i = ceil(k_i / 128) blocks per request, N = sum n_i and blocks_per_sm = ceil(N * 1.1 * kv_heads / SMs),
 * request i gets s_i = clamp(ceil(n_i / blocks_per_sm), 1, 32) splits. This is upstream flash-attention's
 * flash_prepare_scheduler.cu, and it gives the num_splits of every decode row of
 * predictors/data/h200/vllm_kernels_2026-11-30/attention.csv. The persistent kernel runs U = kv_heads * sum s_i
 * work units on the SMs. Where U is a little above the SM count (a partial second wave: 144-192 units at 6-24
 * requests), the byte model came out 11-26% short of FA3 on the real H200 in vLLM serving
 * (predictors/data/h200/vllm_2026-12-07a/b, cases 19, 15, 29, 10). The units of the last wave do not share the
 * card's bandwidth: each streams at most WAVE_UNIT_RATE times a full wave's share. At U up to the SM count
 * (cases 12, 17, 7, 2, one wave or less) the byte model was within 4%, and is kept.
 * So the memory term is scaled, for U > S units over S SMs (w full waves, r units left), by
 *     W = (w * S + max(S / WAVE_UNIT_RATE, r)) / U
 * and by 1 otherwise. WAVE_UNIT_RATE was chosen on those eight profiled cases (35, 40 and 45 GB/s a unit give
 * median |error| 3.6 / 3.6 / 2.8%, max 10.5 / 9.2 / 11.8%; the byte model alone 7.5% and 26%): 40 GB/s,
 * 1.25x a full wave's share of the model's 4.22 TB/s. As a share it carries over to other cards. */
#define WAVE_UNIT_RATE 1.25
#define SPLIT_BLOCK_N 128     /* FA3's K/V block for head dim 128 */
#define SPLIT_MAX 32          /* vLLM's max_num_splits for CUDA-graph-sized batches */

/* FA3's combine kernel after a decode step in which a request was split: it merges the splits' partial
 * outputs, and took 2.6-3.3 us on the real H200 at 1-16 requests (median 3.0 over twelve measurements: the
 * profiled serving steps of vllm_2026-12-07a/b, the offline recording's decode steps at 1,024-2,048 tokens,
 * the microbenchmark's one-request call at 4,096), where the profile's rows, keyed by the launch's grid
 * (5 x the padded batch), hold 1.3-2.0 us for those grids: they were measured at 64 tokens of context, where
 * no request splits (the H200's serving steps came out 30-35% short on it, cases 7, 17, 29; the H100's case
 * 23 -35%). Without a split the rows hold (2.3-2.4 us at 16 and 24 requests, cases 2 and 10). So a split
 * step's combine takes at least COMBINE_SPLIT_NS, at the clock of the card the profile was measured on. */
#define COMBINE_SPLIT_NS 3000.0

typedef struct {
    uint64_t gen;
    double nreq, sum_q, sum_k, pairs, tiles, decode_tiles, heads, kv_heads, head_dim;   /* decode: q_i = 1 */
    double decode_full;   /* decode tiles at the prompts' per-tile cost (short contexts, above), weighted */
    double wave;          /* a decode step's memory-term factor for FA3's last partial wave (above) */
    int split;            /* a decode step in which FA3 splits a request: its combine kernel merges (above) */
} step_ctx;

/* W above for a decode step of n requests with contexts k[] on a card of sms SMs (predictors/fit_attention.py's
 * wave_factor mirrors it); *split is set to whether a request is split. */
static double fa3_decode_units(int n, const int32_t *k, double kv_heads, int sms, int *split) {
    *split = 0;
    if (n <= 0 || sms <= 0 || kv_heads <= 0) return 1;
    double blocks = 0;
    for (int i = 0; i < n; i++) blocks += ceil((k[i] > 0 ? k[i] : 0) / (double)SPLIT_BLOCK_N);
    double per_sm = ceil(blocks * 1.1 * kv_heads / sms);
    if (per_sm < 1) per_sm = 1;
    double units = 0;
    for (int i = 0; i < n; i++) {
        double s = ceil(ceil((k[i] > 0 ? k[i] : 0) / (double)SPLIT_BLOCK_N) / per_sm);
        if (s > 1) *split = 1;
        units += s < 1 ? 1 : s > SPLIT_MAX ? SPLIT_MAX : s;
    }
    units *= kv_heads;
    if (units <= sms) return 1;
    double waves = floor(units / sms), left = units - waves * sms;
    double tail = sms / WAVE_UNIT_RATE;
    return (waves * sms + (left > 0 ? (left > tail ? left : tail) : 0)) / units;
}

static pthread_mutex_t step_lock = PTHREAD_MUTEX_INITIALIZER;
static step_ctx cur;
/* bytes per element of the KV cache: 2 (bf16/fp16), 1 with vLLM's --kv-cache-dtype fp8, where FA3 also
 * reads the query quantized to fp8 (vLLM's attention layer quantizes it) */
static _Atomic int kv_elem_bytes = 2;

void tw_step_set_kv_elem(int bytes) { atomic_store(&kv_elem_bytes, bytes == 1 ? 1 : 2); }

enum { STEP_UNCLASSIFIED = 0, STEP_NONE = 1, STEP_ATTENTION = 2, STEP_COMBINE = 3 };

void tw_step_set(int nreq, const int32_t *q, const int32_t *k, int heads, int kv_heads, int head_dim) {
    step_ctx c = {0};
    c.heads = heads; c.kv_heads = kv_heads > 0 ? kv_heads : heads; c.head_dim = head_dim;
    double group = c.kv_heads > 0 ? c.heads / c.kv_heads : 1;
    for (int i = 0; i < nreq; i++) {
        double qi = q[i] > 0 ? q[i] : 0, ki = k[i] > qi ? k[i] : qi;
        c.sum_q += qi;
        c.sum_k += ki;
        /* causal: the i-th new token sees the ki - qi earlier tokens and the i new ones before it, itself included */
        c.pairs += qi * (ki - qi) + qi * (qi + 1) / 2;
        /* work tiles: the request's query rows of one KV head's group, in blocks of 128 rows, per KV head */
        double t = c.kv_heads * ceil(qi * group / 128);
        c.tiles += t;
        if (q[i] == 1) {
            c.decode_tiles += t;
            double blocks = ceil(ki / 128);   /* the request's KV blocks of 128 tokens */
            double w = (DECODE_FREE_BLOCKS - blocks) / (DECODE_FREE_BLOCKS - DECODE_FULL_BLOCKS);
            c.decode_full += t * (w < 0 ? 0 : w > 1 ? 1 : w);
        }
    }
    c.nreq = nreq;
    c.wave = 1;
    if (c.decode_tiles == c.tiles && nreq > 0) {   /* the split rule is FA3's for decode steps */
        const tw_gpu_spec *s = tw_device_spec(0);
        c.wave = fa3_decode_units(nreq, k, c.kv_heads, s ? s->sm_count : 132, &c.split);
    }
    pthread_mutex_lock(&step_lock);
    c.gen = cur.gen + 1;
    cur = c;
    pthread_mutex_unlock(&step_lock);
}

uint64_t tw_step_generation(void) {
    pthread_mutex_lock(&step_lock);
    uint64_t g = cur.gen;
    pthread_mutex_unlock(&step_lock);
    return g;
}

static int classify(const tw_kernel *k) {
    const char *n = k->pretty ? k->pretty : k->name;
    /* FlashAttention 3 (vLLM's vllm_flash_attn, sm90) and 2's forward kernels; not the split-KV combine */
    if (strstr(n, "pytorch_flash")) return STEP_NONE;   /* torch's own SDPA kernels are annotated by shape */
    if (strstr(n, "FlashAttnFwdCombine")) return STEP_COMBINE;
    if (strstr(n, "FlashAttnFwdSm90") || strstr(n, "FlashAttnFwdSm80") ||
        ((strstr(n, "flash_fwd_kernel") || strstr(n, "flash_fwd_splitkv_kernel")) && !strstr(n, "combine")))
        return STEP_ATTENTION;
    return STEP_NONE;
}

int tw_step_dependent(const tw_op *op) {
    if (op->kind != TW_OP_KERNEL || !op->kernel) return 0;
    tw_kernel *k = (tw_kernel *)op->kernel;
    if (!k->step_class) k->step_class = classify(k);   /* a benign race: every thread computes the same */
    return k->step_class == STEP_ATTENTION || k->step_class == STEP_COMBINE;
}

double tw_step_predict_s(const tw_gpu_spec *spec, const tw_op *op) {
    if (!tw_step_dependent(op)) return 0;
    pthread_mutex_lock(&step_lock);
    step_ctx c = cur;
    pthread_mutex_unlock(&step_lock);
    if (!c.gen || c.nreq <= 0) return 0;
    if (((tw_kernel *)op->kernel)->step_class == STEP_COMBINE) {   /* 0: the profile's row for its grid */
        if (!c.split) return 0;
        int layer;
        double row = tw_profile_predict_s(spec, op, &layer);
        const tw_gpu_spec *card = tw_profile_card();
        double clock = card && spec->sm_clock_mhz > 0 ? (double)card->sm_clock_mhz / spec->sm_clock_mhz : 1;
        double floor_s = (COMBINE_SPLIT_NS + tw_profile_kgap_ns()) * 1e-9 * clock;
        return row > floor_s ? row : floor_s;
    }
    double coef[5];
    /* coef: t0_ns, eff_compute, eff_memory, per_tile_ns, per_decode_tile_ns (the profile's attnstep row) */
    const tw_gpu_spec *fitted = tw_profile_attn_step(coef);
    if (!fitted) {
        coef[0] = spec->launch_floor_s * 1e9; coef[1] = 0.6; coef[2] = 1.0; coef[3] = coef[4] = 0;
        fitted = spec;
    }
    double flops = 4 * c.heads * c.head_dim * c.pairs;
    /* K, V and Q read at the cache's element size, O written in bf16 */
    double e = atomic_load(&kv_elem_bytes);
    double bytes = c.head_dim * (e * (2 * c.sum_k * c.kv_heads + c.sum_q * c.heads) + 2.0 * c.sum_q * c.heads);
    /* at the bf16 rate with an fp8 cache too: vLLM's fp8 FA3 prefill took 1.6-1.8x what the fp8 peak gives
     * (predictors/data/h200/vllm_kvfp8_kernels_2026-12-04) */
    double tc = flops / (coef[1] * fitted->peak_flops_bf16), tm = c.wave * bytes / (coef[2] * fitted->mem_bw);
    /* a decode step's tiles at the serving decode cost, those of short contexts at the in-situ fit's; a step
     * with a prompt chunk keeps the in-situ fit's for all */
    double tile_ns = c.decode_tiles == c.tiles ? coef[4] * (c.tiles - c.decode_full) + coef[3] * c.decode_full
                                               : coef[3] * c.tiles;
    double t = (coef[0] + tile_ns) * 1e-9 + tc + tm;
    if (fitted == spec) return t;
    /* another card: the time on the card the model was fitted on, moved by its shares */
    return tw_transfer_split(spec, t, tc, tm, tc * fitted->peak_flops_bf16 / spec->peak_flops_bf16,
                             tm * fitted->mem_bw / spec->mem_bw, TRANSFER_P_STEP, 1.0);
}
