/* The measured-profile layers of the predictor.
 *
 * TIMEWARP_PROFILE names a table built by predictors/profile_build.py from real measurements (the H200's,
 * today): GEMMs keyed as cuBLAS sees them, attention by shape, host<->device copies by direction and bytes.
 * For an annotated launch, most exact first:
 *   exact    a row with the same key;
 *   interp   log-log interpolation between the rows of the same family (same GEMM operand shapes and
 *            types, same copy direction) along the one dimension that varies (tokens N, bytes); for
 *            attention, bilinear in (log batch, log length) of each measured row's ratio to a fitted
 *            latency-plus-roofline model (attnmodel), applied to this launch's model time;
 *   nearest  the efficiency (roofline time / measured time) of the three nearest rows in log-shape space,
 *            inverse-distance weighted, applied to this launch's roofline;
 *   sibling  (unannotated kernels) the rows of the same kernel on other element types, same sizes first, or
 *            of an Inductor kernel of the same fusion under another number.
 * Unannotated kernels are keyed by name, grid and block (kern rows), except PyTorch's reductions and norms,
 * whose launch size does not tell their work: those are keyed by the row shape read from their arguments
 * (krow rows: outputs, inputs per output; kernel.c).
 * Measured times belong to the profiled GPU; on another GPU each is moved by the rates of what limited it
 * (transfer, below), which is how the catalog's other GPUs are predicted from H200 data. Results are cached
 * per key, so a repeated launch costs one hash lookup.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

extern const tw_gpu_spec tw_catalog[];
extern const int tw_catalog_count;

typedef struct { int a_type, ta, tb; double M, K, N, batch, ns; int sustained; } gemm_row;
typedef struct { int causal; double heads, kv_heads, d, batch, q, kv, ns; } attn_row;
typedef struct { int dir, pinned, graph; double bytes, ns; } copy_row;   /* graph: 1 gcopy, 0 copy, -1 set */
#define SET_DIR 4             /* copy_row.dir of the memset rows (`set`): device memsets by bytes */
/* name first: first_named() finds a name's rows in either table */
typedef struct { char *name; uint32_t g[3], b[3]; double ns; } kern_row;
typedef struct { char *name; double outputs, inputs, ns; } krow_row;

static gemm_row *gemms; static size_t ngemm;
static attn_row *attns; static size_t nattn;
static copy_row *copies; static size_t ncopy;
static kern_row *kerns; static size_t nkern;     /* sorted by name */
static krow_row *krows; static size_t nkrow;     /* sorted by name, inputs, outputs */
static double kgap_ns;
static double attn_step[5];   /* attnstep: t0_ns eff_compute eff_memory per_tile_ns [per_decode_tile_ns] (step.c) */
static double attn_model[3];  /* attnmodel: t0_ns flop_s byte_s (attention's latency-plus-roofline model) */
static int have_attn_model;
static double moe_model[3];   /* moemodel: t0_ns eff_memory eff_compute (vLLM's fused MoE kernel; moe.c) */
static int have_moe_model;
static double align_model[3];  /* gemmalign: t0_ns eff_memory eff_compute (cuBLAS on rows off 16-byte boundaries) */
static int have_align_model;
static double inductor_model[3];  /* inductormodel: t0_ns eff_memory eff_compute (Inductor kernels without rows) */
static int have_inductor_model;
static int have_attn_step;
static uint64_t host_costs[TW_HOST_NCOSTS];
static const tw_gpu_spec *profiled;   /* the GPU the table was measured on */
static pthread_once_t once = PTHREAD_ONCE_INIT;

const char *tw_layer_name(int layer) {
    switch (layer < 0 ? layer : layer & ~TW_LAYER_SUSTAINED) {
    case TW_LAYER_EXACT: return "exact";
    case TW_LAYER_INTERP: return "interp";
    case TW_LAYER_NEAREST: return "nearest";
    case TW_LAYER_GRAPH: return "graph";
    case TW_LAYER_STEP: return "step";
    case TW_LAYER_SIBLING: return "sibling";
    case TW_LAYER_CONFIG: return "config";
    case -1: return "preset";
    default: return "roofline";
    }
}

#define PUSH(arr, n, val) do { void *np_ = realloc(arr, (n + 1) * sizeof *(arr)); if (!np_) break; \
                               arr = np_; (arr)[n++] = (val); } while (0)

static int kern_cmp(const void *a, const void *b) {
    const kern_row *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c) return c;
    double bx = (double)x->g[0] * x->g[1] * x->g[2], by = (double)y->g[0] * y->g[1] * y->g[2];
    return bx < by ? -1 : bx > by;
}

static int krow_cmp(const void *a, const void *b) {
    const krow_row *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c) return c;
    if (x->inputs != y->inputs) return x->inputs < y->inputs ? -1 : 1;
    return x->outputs < y->outputs ? -1 : x->outputs > y->outputs;
}

static void index_siblings(void);

/* The kernel name that ends a kern/krow line (demangled names contain spaces), as a new string. */
static char *rest_of_line(char *s) {
    s[strcspn(s, "\n")] = 0;
    return *s ? strdup(s) : NULL;
}

/* A fitted model's row: "<family> t0_ns <rate or efficiency> <rate or efficiency>", both positive. */
static int model_row(const char *line, double c[3]) {
    return sscanf(line, "%*s %lf %lf %lf", &c[0], &c[1], &c[2]) == 3 && c[1] > 0 && c[2] > 0;
}

static void load_rows(void) {
    const char *path = getenv("TIMEWARP_PROFILE");
    if (!path || !*path) return;
    FILE *f = fopen(path, "r");
    if (!f) { tw_log("TIMEWARP_PROFILE=%s cannot be read; durations come from the roofline alone", path); return; }
    char *line = NULL, fam[16];
    size_t cap = 0;
    int bad = 0;
    while (getline(&line, &cap, f) > 0) {   /* demangled kernel names run to thousands of characters */
        if (line[0] == '#' || line[0] == '\n') continue;
        if (sscanf(line, "%15s", fam) != 1) continue;
        if (!strcmp(fam, "gpu")) {
            char key[64];
            if (sscanf(line, "%*s %63s", key) == 1)
                for (int i = 0; i < tw_catalog_count; i++) if (!strcmp(tw_catalog[i].key, key)) profiled = &tw_catalog[i];
        } else if (!strcmp(fam, "gemm")) {
            gemm_row r = {.sustained = 0};   /* a ninth field, 1: measured inside sustained work (in situ) */
            if (sscanf(line, "%*s %d %d %d %lf %lf %lf %lf %lf %d", &r.a_type, &r.ta, &r.tb, &r.M, &r.K, &r.N, &r.batch, &r.ns,
                       &r.sustained) >= 8)
                PUSH(gemms, ngemm, r);
            else bad++;
        } else if (!strcmp(fam, "attn")) {
            attn_row r;
            if (sscanf(line, "%*s %d %lf %lf %lf %lf %lf %lf %lf", &r.causal, &r.heads, &r.kv_heads, &r.d, &r.batch, &r.q, &r.kv,
                       &r.ns) == 8)
                PUSH(attns, nattn, r);
            else bad++;
        } else if (!strcmp(fam, "copy") || !strcmp(fam, "gcopy")) {
            copy_row r = {.graph = fam[0] == 'g'};
            if (sscanf(line, "%*s %d %d %lf %lf", &r.dir, &r.pinned, &r.bytes, &r.ns) == 4) PUSH(copies, ncopy, r);
            else bad++;
        } else if (!strcmp(fam, "set")) {
            copy_row r = {.dir = SET_DIR, .pinned = 1, .graph = -1};
            if (sscanf(line, "%*s %lf %lf", &r.bytes, &r.ns) == 2) PUSH(copies, ncopy, r);
            else bad++;
        } else if (!strcmp(fam, "host")) {
            char what[32];
            double ns;
            if (sscanf(line, "%*s %31s %lf", what, &ns) != 2) bad++;
            else if (!strcmp(what, "launch_ns")) host_costs[TW_HOST_LAUNCH] = (uint64_t)ns;
            else if (!strcmp(what, "graph_launch_ns")) host_costs[TW_HOST_GRAPH_LAUNCH] = (uint64_t)ns;
            else if (!strcmp(what, "gemm_ns")) host_costs[TW_HOST_GEMM] = (uint64_t)ns;
            else if (!strcmp(what, "attention_ns")) host_costs[TW_HOST_ATTN] = (uint64_t)ns;
            else if (!strcmp(what, "sync_ns")) host_costs[TW_HOST_SYNC] = (uint64_t)ns;
            else if (!strcmp(what, "module_load_ns")) host_costs[TW_HOST_MODULE_LOAD] = (uint64_t)ns;
            else if (!strcmp(what, "module_load_ns_per_mb")) host_costs[TW_HOST_MODULE_LOAD_PER_MB] = (uint64_t)ns;
            else if (!strcmp(what, "graph_upload_ns")) host_costs[TW_HOST_GRAPH_UPLOAD] = (uint64_t)ns;
            else if (!strcmp(what, "graph_upload_ns_per_node")) host_costs[TW_HOST_GRAPH_UPLOAD_PER_NODE] = (uint64_t)ns;
            else if (!strcmp(what, "blas_kernel_load_ns")) host_costs[TW_HOST_BLAS_KERNEL_LOAD] = (uint64_t)ns;
            else bad++;
        } else if (!strcmp(fam, "blaskern")) {
            long long m, k, n0, n1;
            int kid, kid2, ms;
            if (sscanf(line, "%*s %lld %lld %lld %lld %d %d %d", &m, &k, &n0, &n1, &kid, &kid2, &ms) == 7)
                tw_blas_table_add(m, k, n0, n1, kid, kid2, ms);
            else bad++;
        } else if (!strcmp(fam, "attnstep")) {
            int got = sscanf(line, "%*s %lf %lf %lf %lf %lf", &attn_step[0], &attn_step[1], &attn_step[2],
                             &attn_step[3], &attn_step[4]);
            if (got == 4) attn_step[4] = attn_step[3];   /* an older row: decode tiles cost what others do */
            if (got >= 4) have_attn_step = 1;
            else bad++;
        } else if (!strcmp(fam, "attnmodel")) {
            if (model_row(line, attn_model)) have_attn_model = 1;
            else bad++;
        } else if (!strcmp(fam, "gemmalign")) {
            if (model_row(line, align_model)) have_align_model = 1;
        } else if (!strcmp(fam, "inductormodel")) {
            if (model_row(line, inductor_model)) have_inductor_model = 1;
            else bad++;
        } else if (!strcmp(fam, "moemodel")) {
            if (model_row(line, moe_model)) have_moe_model = 1;
            else bad++;
        } else if (!strcmp(fam, "kgap")) {
            if (sscanf(line, "%*s %lf", &kgap_ns) != 1) bad++;
        } else if (!strcmp(fam, "kern")) {
            kern_row r;
            int off = 0;
            if (sscanf(line, "%*s %u %u %u %u %u %u %lf %n", &r.g[0], &r.g[1], &r.g[2], &r.b[0], &r.b[1], &r.b[2], &r.ns, &off) == 7 &&
                off > 0 && (r.name = rest_of_line(line + off)))
                PUSH(kerns, nkern, r);
            else bad++;
        } else if (!strcmp(fam, "krow")) {
            krow_row r;
            int off = 0;
            if (sscanf(line, "%*s %lf %lf %lf %n", &r.outputs, &r.inputs, &r.ns, &off) == 3 && off > 0 && r.outputs > 0 &&
                r.inputs > 0 && (r.name = rest_of_line(line + off)))
                PUSH(krows, nkrow, r);
            else bad++;
        } else bad++;
    }
    free(line);
    fclose(f);
    qsort(kerns, nkern, sizeof *kerns, kern_cmp);
    qsort(krows, nkrow, sizeof *krows, krow_cmp);
    index_siblings();
    if (bad) tw_log("TIMEWARP_PROFILE=%s: %d lines not understood (skipped)", path, bad);
    if (!profiled) {
        tw_log("TIMEWARP_PROFILE=%s names no catalog GPU (a 'gpu <KEY>' line); the profile is not used", path);
        ngemm = nattn = ncopy = nkern = nkrow = 0;
        memset(host_costs, 0, sizeof host_costs);
        tw_blas_table_clear();
    }
}

/* reading the table is the emulator's own work, not the program's host time */
static void load(void) {
    tw_charge_pause();
    load_rows();
    tw_charge_resume();
}

/* ---------------------------------------------------------------- cache of predictions per key */
#define CACHE_SLOTS 8192
typedef struct { uint64_t key; const tw_gpu_spec *spec; double s; int layer; unsigned gen; } centry;
static centry cache[CACHE_SLOTS];
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t mix(uint64_t h, uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); return h; }

static uint64_t op_key(const tw_op *op) {
    uint64_t h = 1469598103934665603ull ^ (uint64_t)op->kind;
    const tw_annotation *a = &op->ann;
    if (op->kind == TW_OP_MEMCPY || op->kind == TW_OP_MEMSET)
        return mix(mix(mix(mix(h, op->dir), op->pinned), op->bytes), op->captured);
    h = mix(h, a->kind);
    if (a->kind == TW_ANN_NONE) {
        h = mix(h, op->kernel ? op->kernel->id : 0);
        for (int i = 0; i < 3; i++) h = mix(mix(h, op->grid[i]), op->block[i]);
        return mix(mix(h, (uint64_t)op->rows[0]), (uint64_t)op->rows[1]);
    }
    if (a->kind == TW_ANN_GEMM) {
        h = mix(mix(mix(h, a->u.gemm.m), a->u.gemm.n), a->u.gemm.k);
        h = mix(mix(mix(h, a->u.gemm.batch), a->u.gemm.a_type), a->u.gemm.c_type);
        h = mix(mix(mix(h, a->u.gemm.trans_a), a->u.gemm.trans_b), a->u.gemm.compute_type);
        return mix(mix(h, a->u.gemm.epilogue), a->u.gemm.source);
    }
    h = mix(mix(mix(h, a->u.attn.batch), a->u.attn.q_len), a->u.attn.kv_len);
    h = mix(mix(mix(h, a->u.attn.heads), a->u.attn.kv_heads), a->u.attn.head_dim);
    return mix(mix(h, a->u.attn.causal), a->u.attn.dtype);
}

/* ---------------------------------------------------------------- the layers */
static double lerp_log(double x0, double y0, double x1, double y1, double x) {
    if (x1 == x0) return y0;
    double t = (log(x) - log(x0)) / (log(x1) - log(x0));
    return exp(log(y0) + t * (log(y1) - log(y0)));
}

/* Measured seconds on the profiled GPU -> seconds on spec. A measured time is split by what limited it on the
 * profiled card: the share its memory traffic needed (memory time at the achievable bandwidth over the measured
 * time, at most 1), the share its tensor work needed, and the rest (issue, latency, synchronisation: SM-bound
 * work, scaled by SMs x clock). Each share moves with its own resource's rate, and they add as squares
 * (TRANSFER_P): limits overlap, but a kernel near one of them slows with it before it is fully bound. Where
 * the launch's bytes are not known (an unannotated kernel: tw_roofline_parts), the time is scaled by the
 * ratio of the two rooflines, as every time was before 2026-12-05.
 * Why: on the real H100 (the H200's die, SMs and clocks with 0.69x its memory bandwidth;
 * predictors/data/h100/transfer_2026-12-05) kernels between the two limits did not take the bandwidth
 * ratio. Attention decodes whose memory needed half their H200 time ran 1.09x it, not 1.27x; microbenchmark
 * rows at 0.4-0.6 of the H200's bandwidth ran 1.07-1.10x. Over the two cards' attention tables the square sum
 * gives median |error| 2.0% and p90 7.4% (the roofline ratio 3.7% / 37%); emulated, the attention family's
 * graph rows went from 3.3% / 13.8% to 1.8% / 6.8% and D2D copies' p90 from 16.9% to 9.7%. Cubes fit the
 * elementwise rows a little better and attention a little worse. GEMMs: below. */
#define TRANSFER_P 2.0
/* Unannotated kernels whose bytes are known (PyTorch's elementwise kernels, reductions, softmax, Inductor's
 * kernels) stream their tensors with little else to wait on, so compute and memory overlap more fully: over
 * the H100's 418 elementwise rows (emulated graph nodes) p = 4 gave median |error| 3.1% and p90 13.7%, p = 2
 * 4.0% / 15.9%, p = 3 and 6 between them (2026-12-05, forty-second session). */
#define TRANSFER_P_STREAM 4.0
/* GEMMs (cuBLAS's, annotated with m, n, k and types) split their measured time the same way, with two
 * differences: a GEMM streams its operands at no more than GEMM_STREAM_FRACTION of the copy bandwidth the
 * catalog lists (so a memory share of 0.9 there is fully memory-bound), and the shares add as fourth powers.
 * Why: the roofline ratio, which GEMMs took until 2026-12-06, moves every weight-streaming GEMM with the
 * bandwidth ratio (1.44 from the H200 to the H100), but the H100 ran 65-160-row GEMMs 1.35x the H200 (the
 * tensor work, the same on both cards, is half their time there) and vLLM's decode-step GEMMs at 64 requests
 * 1.34x (profiler traces of case 3 on both cards: gate_up 1.39, down 1.32, qkv 1.27, o_proj 1.24). Over the
 * two cards' 293 bf16 GEMM graph rows (predictors/data/h100/transfer_2026-12-05/mb_gemm against
 * ../h200/gemm_cool_2026-12-03) the ratio this gives is off the measured one by median 2.5% and p90 7.6%
 * (the roofline ratio: 2.8% / 8.5%); by rows, median error -2.7 / -1.2 / +1.3 / +0.1 / +1.1 / -2.1% for 1-8,
 * 9-32, 33-64, 65-160, 161-600 and more rows (roofline ratio: -0.5 / 0.0 / +2.0 / +4.6 / -2.6 / -2.1%). On
 * vLLM's own decode GEMMs, which no fit saw, one layer's ratio comes out +1.0% (the roofline ratio: +4.7%);
 * on nine other models' shapes measured on both cards afterwards (476 rows, predictors/data/h100/
 * gemm_models_2026-12-06) 2.9% / 7.9% (the roofline ratio: 4.1% / 15.2%, +8 to +11% at 1-160 rows).
 * Fractions 0.8-1.0 and powers 2-6 were tried (predictors/calibration/gemm_transfer_fit.py). */
#define GEMM_STREAM_FRACTION 0.9
#define TRANSFER_P_GEMM 4.0

/* The arithmetic of transfer, below, given the work's parts on both cards; step.c's attention model uses it
 * too (tw/core.h). */
double tw_transfer_split(const tw_gpu_spec *spec, double measured_s, double cp, double mp, double ct, double mt,
                         double P, double stream) {
    if (!profiled || spec == profiled || measured_s <= 0) return measured_s;
    double fm = mp > 0 ? fmin(1.0, mp / (stream * measured_s)) : 0, fc = cp > 0 ? fmin(1.0, cp / measured_s) : 0;
    double wm = pow(fm, P), wc = pow(fc, P), bound = wm + wc;
    if (bound > 1) { wm /= bound; wc /= bound; bound = 1; }   /* both limits near: shares of one whole */
    double sm = (double)profiled->sm_count * profiled->sm_clock_mhz / ((double)spec->sm_count * spec->sm_clock_mhz);
    double r = (1 - bound) * pow(sm, P);
    if (wm > 0) r += wm * pow(mt / mp, P);
    if (wc > 0) r += wc * pow(ct / cp, P);
    return measured_s * pow(r, 1.0 / P);
}

static double transfer(const tw_gpu_spec *spec, const tw_op *op, double measured_s) {
    if (spec == profiled) return measured_s;
    double cp, mp, ct, mt;
    if (measured_s <= 0 || !tw_roofline_parts(profiled, op, &cp, &mp) || !tw_roofline_parts(spec, op, &ct, &mt))
        return measured_s * tw_roofline_s(spec, op) / tw_roofline_s(profiled, op);
    double P = TRANSFER_P, stream = 1.0;   /* stream: the fraction of the bandwidth its memory share is taken at */
    if (op->kind == TW_OP_KERNEL && op->ann.kind == TW_ANN_GEMM) { P = TRANSFER_P_GEMM; stream = GEMM_STREAM_FRACTION; }
    else if (op->kind == TW_OP_KERNEL && op->ann.kind == TW_ANN_NONE) P = TRANSFER_P_STREAM;
    return tw_transfer_split(spec, measured_s, cp, mp, ct, mt, P, stream);
}

/* The three nearest measured shapes' efficiencies, kept sorted by distance; their inverse-distance
 * weighted mean is the `nearest` layer's efficiency. */
typedef struct { double d[3], e[3]; } nearest3;

static void nearest_init(nearest3 *n) { for (int j = 0; j < 3; j++) { n->d[j] = 1e30; n->e[j] = 0; } }

static void nearest_add(nearest3 *n, double dist, double eff) {
    for (int j = 0; j < 3; j++)
        if (dist < n->d[j]) {
            for (int q = 2; q > j; q--) { n->d[q] = n->d[q - 1]; n->e[q] = n->e[q - 1]; }
            n->d[j] = dist; n->e[j] = eff;
            return;
        }
}

/* 0 when nothing was added */
static double nearest_eff(const nearest3 *n) {
    double wsum = 0, esum = 0;
    for (int j = 0; j < 3 && n->d[j] < 1e29; j++) { double w = 1.0 / (n->d[j] + 0.05); wsum += w; esum += w * n->e[j]; }
    return wsum > 0 ? esum / wsum : 0;
}

/* The GEMM rows' type of a launch: A's cudaDataType_t, or 77 for fp32 operands computed as TF32
 * (CUBLAS_COMPUTE_32F_FAST_TF32), which run 4x as fast as plain fp32 and are measured apart */
static int gemm_row_type(const tw_annotation *a) {
    return a->u.gemm.a_type == 0 && a->u.gemm.compute_type == 77 ? 77 : a->u.gemm.a_type;
}

/* An annotated launch's time by a fitted row c: t0 + max(memory time / eff_m, compute time / eff_c), at the
 * target's rates; 0 without the annotation's times. */
static double fitted_roofline(const double c[3], const tw_gpu_spec *spec, const tw_op *op) {
    double tc, tm;
    if (!tw_annotated_times(spec, op, &tc, &tm)) return 0;
    tm /= c[1];
    tc /= c[2];
    return c[0] * 1e-9 + (tm > tc ? tm : tc);
}

/* A fused MoE launch (moe.c): the fitted model over the batched GEMM's bytes and FLOPs at the target's rates,
 * 0 without the row. */
static double moe_predict(const tw_gpu_spec *spec, const tw_op *op, int *layer) {
    double s = have_moe_model ? fitted_roofline(moe_model, spec, op) : 0;
    if (s > 0) *layer = TW_LAYER_STEP;
    return s;
}

static double gemm_predict(const tw_gpu_spec *spec, const tw_op *op, int *layer) {
    const tw_annotation *a = &op->ann;
    if (a->u.gemm.source == TW_GEMM_FUSED_MOE) {
        double s = moe_predict(spec, op, layer);
        if (s > 0) return s;
    }
    double M = a->u.gemm.m, N = a->u.gemm.n, K = a->u.gemm.k, B = a->u.gemm.batch > 0 ? a->u.gemm.batch : 1;
    int type = gemm_row_type(a);
    /* same family: operand types and shapes, transposes; N (the tokens) varies */
    const gemm_row *lo = NULL, *hi = NULL;
    for (size_t i = 0; i < ngemm; i++) {
        const gemm_row *r = &gemms[i];
        if (r->a_type != type || r->ta != a->u.gemm.trans_a || r->tb != a->u.gemm.trans_b || r->M != M ||
            r->K != K || r->batch != B)
            continue;
        if (r->N == N) {
            *layer = TW_LAYER_EXACT | (r->sustained ? TW_LAYER_SUSTAINED : 0);
            return transfer(spec, op, r->ns * 1e-9);
        }
        if (r->N < N && (!lo || r->N > lo->N)) lo = r;
        if (r->N > N && (!hi || r->N < hi->N)) hi = r;
    }
    if (lo && hi) {
        *layer = TW_LAYER_INTERP | (lo->sustained || hi->sustained ? TW_LAYER_SUSTAINED : 0);
        return transfer(spec, op, lerp_log(lo->N, lo->ns, hi->N, hi->ns, N) * 1e-9);
    }
    /* nearest neighbours' efficiency, in log-shape space (types must match); 8-bit operands (fp8, int8: vLLM's
     * quantized linear layers), which have no rows of their own, take the bf16 rows' efficiency at their own
     * rates (an estimate: no 8-bit GEMM was measured) */
    int row_type = type;
    if (type == 28 || type == 29 || type == 3) {
        row_type = 14;
        for (size_t i = 0; i < ngemm && row_type != type; i++) if (gemms[i].a_type == type) row_type = type;
        if (row_type != type) {
            static int told;
            if (!__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED))
                tw_log("note: 8-bit GEMMs (cudaDataType %d) have no measured rows; timed by the bf16 rows' "
                       "efficiency at the GPU's 8-bit rate (an estimate)", type);
        }
    }
    nearest3 nn;
    nearest_init(&nn);
    for (size_t i = 0; i < ngemm; i++) {
        const gemm_row *r = &gemms[i];
        if (r->a_type != row_type) continue;
        double d = fabs(log(r->M / M)) + fabs(log(r->K / K)) + fabs(log(r->N / N)) + fabs(log(r->batch / B)) +
                   0.25 * ((r->ta != a->u.gemm.trans_a) + (r->tb != a->u.gemm.trans_b));
        tw_op ro = *op;
        ro.ann.u.gemm.m = (int64_t)r->M; ro.ann.u.gemm.n = (int64_t)r->N; ro.ann.u.gemm.k = (int64_t)r->K;
        ro.ann.u.gemm.batch = (int64_t)r->batch;
        if (row_type != type) ro.ann.u.gemm.a_type = ro.ann.u.gemm.b_type = ro.ann.u.gemm.c_type = row_type;
        nearest_add(&nn, d, tw_roofline_s(profiled, &ro) / (r->ns * 1e-9));
    }
    double eff = nearest_eff(&nn);
    if (eff <= 0) return 0;
    *layer = TW_LAYER_NEAREST;
    return tw_roofline_s(spec, op) / eff;
}

static double attn_eff(const attn_row *r, const tw_op *op) {
    tw_op ro = *op;
    ro.ann.u.attn.batch = (int64_t)r->batch; ro.ann.u.attn.q_len = (int64_t)r->q; ro.ann.u.attn.kv_len = (int64_t)r->kv;
    ro.ann.u.attn.heads = (int64_t)r->heads; ro.ann.u.attn.kv_heads = (int64_t)r->kv_heads;
    ro.ann.u.attn.head_dim = (int64_t)r->d; ro.ann.u.attn.causal = r->causal;
    return tw_roofline_s(profiled, &ro) / (r->ns * 1e-9);
}

/* Seconds on the profiled GPU by the fitted model t0 + max(flops / P, bytes / W) (profile_build.py's
 * attn_work and fit_attn_model count the same way). */
static double attn_model_s(int causal, double h, double hk, double d, double b, double q, double kv) {
    double flops = 4.0 * b * h * q * kv * d * (causal && q == kv ? 0.5 : 1.0);
    double bytes = 2.0 * b * (2.0 * q * h + 2.0 * kv * hk) * d;
    double c = flops / attn_model[1], m = bytes / attn_model[2];
    return attn_model[0] * 1e-9 + (c > m ? c : m);
}

/* What is interpolated for a measured row: log(measured / model) where the profile has the model (the
 * returned estimate is then model x exp(interpolated) seconds on the profiled GPU), else log efficiency. */
static double attn_residual(const attn_row *r, const tw_op *op) {
    if (have_attn_model)
        return log(r->ns * 1e-9 / attn_model_s(r->causal, r->heads, r->kv_heads, r->d, r->batch, r->q, r->kv));
    return log(attn_eff(r, op));
}

/* Bilinear interpolation over (log batch, log length) inside one family (mask, heads, head dim) and regime
 * (prefill: q = kv; decode: one query, kv varies) of attn_residual. Returns seconds on the profiled GPU with
 * the model, else an efficiency; 0 if the four corners are not all measured. */
static double attn_bilinear(const tw_op *op, double b, double len, int decode) {
    const tw_annotation *a = &op->ann;
    double h = a->u.attn.heads, hk = a->u.attn.kv_heads > 0 ? a->u.attn.kv_heads : h, d = a->u.attn.head_dim;
    double b0 = -1, b1 = 1e300, l0 = -1, l1 = 1e300;
    const attn_row *fam[4096];
    size_t n = 0;
    for (size_t i = 0; i < nattn && n < 4096; i++) {
        const attn_row *r = &attns[i];
        if (r->causal != a->u.attn.causal || r->heads != h || r->kv_heads != hk || r->d != d) continue;
        if (decode ? r->q != 1 : r->q != r->kv) continue;
        double rl = decode ? r->kv : r->q;
        fam[n++] = r;
        if (r->batch <= b && r->batch > b0) b0 = r->batch;
        if (r->batch >= b && r->batch < b1) b1 = r->batch;
        if (rl <= len && rl > l0) l0 = rl;
        if (rl >= len && rl < l1) l1 = rl;
    }
    if (b0 < 0 || l0 < 0 || b1 > 1e299 || l1 > 1e299) return 0;
    double e[2][2] = {{0, 0}, {0, 0}};
    for (size_t i = 0; i < n; i++) {
        double rl = decode ? fam[i]->kv : fam[i]->q;
        int bi = fam[i]->batch == b0 ? 0 : fam[i]->batch == b1 ? 1 : -1;
        int li = rl == l0 ? 0 : rl == l1 ? 1 : -1;
        if (bi < 0 || li < 0) continue;
        double v = attn_residual(fam[i], op);
        e[bi][li] = v;
        if (b0 == b1) e[1][li] = v;
        if (l0 == l1) e[bi][1] = v;
        if (b0 == b1 && l0 == l1) e[1][1] = v;
    }
    if (!e[0][0] || !e[0][1] || !e[1][0] || !e[1][1]) return 0;
    double tb = b1 == b0 ? 0 : (log(b) - log(b0)) / (log(b1) - log(b0));
    double tl = l1 == l0 ? 0 : (log(len) - log(l0)) / (log(l1) - log(l0));
    double v = (1 - tb) * ((1 - tl) * e[0][0] + tl * e[0][1]) + tb * ((1 - tl) * e[1][0] + tl * e[1][1]);
    if (have_attn_model) return attn_model_s(a->u.attn.causal, h, hk, d, b, decode ? 1 : len, len) * exp(v);
    return exp(v);
}

static double attn_predict(const tw_gpu_spec *spec, const tw_op *op, int *layer) {
    const tw_annotation *a = &op->ann;
    double b = a->u.attn.batch, q = a->u.attn.q_len, kv = a->u.attn.kv_len, h = a->u.attn.heads,
           hk = a->u.attn.kv_heads > 0 ? a->u.attn.kv_heads : h, d = a->u.attn.head_dim;
    nearest3 nn;
    nearest_init(&nn);
    for (size_t i = 0; i < nattn; i++) {
        const attn_row *r = &attns[i];
        if (r->causal == a->u.attn.causal && r->heads == h && r->kv_heads == hk && r->d == d && r->batch == b && r->q == q &&
            r->kv == kv) {
            *layer = TW_LAYER_EXACT;
            return transfer(spec, op, r->ns * 1e-9);
        }
        /* decode (one query) and prefill are different kernels' regimes: keep them apart */
        double dist = fabs(log(r->batch / b)) + fabs(log(r->q / q)) + fabs(log(r->kv / kv)) + fabs(log(r->heads / h)) +
                      fabs(log(r->kv_heads / hk)) + fabs(log(r->d / d)) + (r->causal != a->u.attn.causal) * 0.5 +
                      ((r->q == 1) != (q == 1)) * 4.0;
        nearest_add(&nn, dist, attn_eff(r, op));
    }
    double v = (q == 1 || q == kv) ? attn_bilinear(op, b, q == 1 ? kv : q, q == 1) : 0;
    if (v > 0) {
        *layer = TW_LAYER_INTERP;
        return have_attn_model ? transfer(spec, op, v) : tw_roofline_s(spec, op) / v;
    }
    double eff = nearest_eff(&nn);
    if (eff <= 0) return 0;
    *layer = TW_LAYER_NEAREST;
    return tw_roofline_s(spec, op) / eff;
}

/* The rows of one kind (graph: 1 gcopy, 0 copy, -1 set): exact, or log-log interpolation between the
 * neighbours (*reach 1), or the nearest segment extended beyond them (*reach 0, but 1 below rows that start
 * at 4 KiB or less: latency-bound there); 0 if there are none. */
static double copy_lookup(const tw_gpu_spec *spec, const tw_op *op, int dir, int pinned, int graph, int *reach,
                          int *layer) {
    double x = op->bytes > 0 ? (double)op->bytes : 1;
    const copy_row *lo = NULL, *hi = NULL, *lo2 = NULL;
    *reach = 1;
    for (size_t i = 0; i < ncopy; i++) {
        const copy_row *r = &copies[i];
        if (r->dir != dir || r->pinned != pinned || r->graph != graph) continue;
        if (r->bytes == x) { *layer = TW_LAYER_EXACT; return transfer(spec, op, r->ns * 1e-9); }
        if (r->bytes < x && (!lo || r->bytes > lo->bytes)) { lo2 = lo; lo = r; }
        else if (r->bytes < x && (!lo2 || r->bytes > lo2->bytes)) lo2 = r;
        if (r->bytes > x && (!hi || r->bytes < hi->bytes)) hi = r;
    }
    *layer = TW_LAYER_INTERP;
    if (lo && hi) return transfer(spec, op, lerp_log(lo->bytes, lo->ns, hi->bytes, hi->ns, x) * 1e-9);
    *reach = 0;
    /* beyond the measured sizes: extend the last segment (bandwidth-bound at the top, latency at the bottom) */
    if (lo && lo2) return transfer(spec, op, fmax(lo->ns, lerp_log(lo2->bytes, lo2->ns, lo->bytes, lo->ns, x)) * 1e-9);
    /* smaller than every measurement: latency-bound, if the rows reach down to where copies are */
    if (hi) { *reach = hi->bytes <= 4096; return transfer(spec, op, hi->ns * 1e-9); }
    if (lo) return transfer(spec, op, lo->ns * x / lo->bytes * 1e-9);
    return 0;
}

/* Copies by direction, pinning and bytes, eager ones from the copy rows and graph nodes from the gcopy rows
 * (on the H200 a pinned copy of 4-32 KiB takes about 1 us eagerly, as vLLM issues them, and 2.4-3.3 us as a
 * node; a D2D copy of 512 MiB or 1 GiB 1.5x as long as a node as eagerly), each from the other's rows where
 * its own do not reach its size; device memsets (set rows) by bytes. */
static double copy_predict(const tw_gpu_spec *spec, const tw_op *op, int *layer) {
    int memset = op->kind == TW_OP_MEMSET;
    if (!memset && op->dir == TW_COPY_H2H) return 0;
    int dir = memset ? SET_DIR : (int)op->dir;
    int pinned = memset || op->dir == TW_COPY_D2D ? 1 : (op->pinned != 0);
    if (memset) { int reach; return copy_lookup(spec, op, dir, pinned, -1, &reach, layer); }
    int own = op->captured ? 1 : 0, reach, other_reach, other_layer;
    double s = copy_lookup(spec, op, dir, pinned, own, &reach, layer);
    if (reach) return s;
    double o = copy_lookup(spec, op, dir, pinned, !own, &other_reach, &other_layer);
    if (other_reach || s <= 0) { *layer = other_layer; return o; }
    return s;
}

/* The index of the first of n rows (sorted by name; each struct begins with its char *name) named name. */
static size_t first_named(const void *rows, size_t n, size_t stride, const char *name) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (strcmp(*(char *const *)((const char *)rows + mid * stride), name) < 0) lo = mid + 1; else hi = mid;
    }
    return lo;
}

/* Elements (outputs x inputs) from which a row kernel's launch is bandwidth-bound on the H200 (2^24: 32 MiB of
 * bf16, over 10 us of traffic): a line whose largest row is that big extends proportionally to more outputs. */
#define KROW_BANDWIDTH_ELEMS 16777216.0

/* Whether a measured line (rows of one `inputs`, [i, j) sorted by outputs) reaches `outputs`: 2 within it, or
 * above its largest row when that one is bandwidth-bound (proportionally more traffic); 1 below its smallest
 * row (the smallest row's time: a weaker guess, since one output and a few take different code paths in
 * PyTorch's reductions); 0 otherwise. A small line is not extrapolated upwards: a single whole-tensor
 * reduction (one output) says nothing of 512 rows. */
static int krow_reaches(size_t i, size_t j, double outputs) {
    if (outputs > krows[j - 1].outputs)
        return krows[j - 1].outputs * krows[j - 1].inputs >= KROW_BANDWIDTH_ELEMS ? 2 : 0;
    return outputs >= krows[i].outputs ? 2 : 1;
}

/* A row kernel's time at `outputs` on one measured line that reaches it: the row itself, log-log
 * interpolation between its neighbours, the smallest row's time below it, the largest's scaled above it. */
static double krow_along(size_t i, size_t j, double outputs, int *exact) {
    size_t k = i;
    while (k < j - 1 && krows[k].outputs < outputs) k++;
    *exact = krows[k].outputs == outputs;
    if (*exact || outputs < krows[i].outputs) return krows[k].ns;
    if (outputs > krows[k].outputs) return krows[k].ns * outputs / krows[k].outputs;   /* k = j - 1 */
    return lerp_log(krows[k - 1].outputs, krows[k - 1].ns, krows[k].outputs, krows[k].ns, outputs);
}

/* PyTorch's reductions and norms by their row shape (op->rows: outputs, inputs per output), which their
 * grid does not tell. The measured lines (rows of one `inputs`) that reach the launch's outputs
 * (krow_reaches) are read at its outputs; the nearest two such lines in log inputs, one each side, are
 * interpolated in log inputs, or the one line is scaled by the row length when the launch's rows are longer.
 * Where no line reaches the outputs, the row nearest in (log outputs, log inputs) is scaled by the work when
 * the launch has more. 0 if the kernel has no krow rows. (Before lines reached below their smallest row and
 * above a bandwidth-bound largest one, a 1 x 1024 rms_norm took the 1 x 4096 line's time, +84%, and 65536
 * rows of 4096 the 1024-long line's scaled by 4, +56-73%.) */
static double krow_predict(const char *name, const tw_op *op, int *layer) {
    size_t lo = first_named(krows, nkrow, sizeof *krows, name);
    size_t end = lo;
    while (end < nkrow && !strcmp(krows[end].name, name)) end++;
    if (lo == end) return 0;
    double O = (double)op->rows[0], I = (double)op->rows[1];
    /* the lines reaching O below and above I, nearest in inputs, among those of the best reach on each side */
    size_t b0 = SIZE_MAX, b1 = 0, a0 = SIZE_MAX, a1 = 0;
    int breach = 0, areach = 0;
    for (size_t i = lo; i < end;) {
        size_t j = i;
        while (j < end && krows[j].inputs == krows[i].inputs) j++;
        int r = krow_reaches(i, j, O);   /* rows sorted by outputs within a line */
        if (r && krows[i].inputs <= I && r >= breach) { b0 = i; b1 = j; breach = r; }
        if (r && krows[i].inputs >= I && r > areach) { a0 = i; a1 = j; areach = r; }
        i = j;
    }
    int exact = 0, e;   /* exact: the launch's shape itself was measured */
    double ns;
    if (b0 != SIZE_MAX && a0 != SIZE_MAX) {
        double t0 = krow_along(b0, b1, O, &exact), t1 = krow_along(a0, a1, O, &e);
        ns = b0 == a0 ? t0 : lerp_log(krows[b0].inputs, t0, krows[a0].inputs, t1, I);
        exact = exact && b0 == a0;
    } else if (b0 != SIZE_MAX) {
        ns = krow_along(b0, b1, O, &e) * I / krows[b0].inputs;
    } else if (a0 != SIZE_MAX) {
        ns = krow_along(a0, a1, O, &e);
    } else {
        const krow_row *best = NULL;
        double bd = 1e300;
        for (size_t i = lo; i < end; i++) {
            double d = fabs(log(krows[i].outputs / O)) + fabs(log(krows[i].inputs / I));
            if (d < bd) { bd = d; best = &krows[i]; }
        }
        double work = O * I / (best->outputs * best->inputs);
        ns = best->ns * (work > 1 ? work : 1);
    }
    *layer = exact ? TW_LAYER_EXACT : TW_LAYER_INTERP;
    return ns;
}

/* The measured launches of kernel `name` with the launch's block shape: the same launch shape (exact), or
 * interpolated over the number of blocks (log-log; proportional beyond the largest, as bandwidth-bound
 * kernels are). 0 when the name has no row with that block shape. *weak is set when the launch is larger
 * than every row and the largest is latency-bound (under two waves of blocks): scaling a one-block
 * launch's time by the block count says little of a launch that fills the card. *weak is then that
 * row's time, else 0. */
static double kern_interp(const char *name, const tw_op *op, int *layer, double *weak) {
    size_t lo = first_named(kerns, nkern, sizeof *kerns, name);
    double blocks = (double)op->grid[0] * op->grid[1] * op->grid[2];
    const kern_row *below = NULL, *above = NULL;
    *weak = 0;
    for (size_t i = lo; i < nkern && !strcmp(kerns[i].name, name); i++) {
        const kern_row *r = &kerns[i];
        if (r->b[0] != op->block[0] || r->b[1] != op->block[1] || r->b[2] != op->block[2]) continue;
        if (r->g[0] == op->grid[0] && r->g[1] == op->grid[1] && r->g[2] == op->grid[2]) {
            *layer = TW_LAYER_EXACT;
            return r->ns;
        }
        double rb = (double)r->g[0] * r->g[1] * r->g[2];
        if (rb <= blocks) below = r;                    /* rows are sorted by blocks within a name */
        else if (!above) above = r;
    }
    *layer = TW_LAYER_INTERP;
    if (below && above) {
        double b0 = (double)below->g[0] * below->g[1] * below->g[2], b1 = (double)above->g[0] * above->g[1] * above->g[2];
        return lerp_log(b0, below->ns, b1, above->ns, blocks);
    }
    if (below) {
        double b0 = (double)below->g[0] * below->g[1] * below->g[2];
        if (blocks > b0 && b0 < 2.0 * profiled->sm_count) *weak = below->ns;
        return below->ns * (blocks / b0 > 1 ? blocks / b0 : 1);
    }
    if (above) return above->ns;                        /* fewer blocks than any measurement: latency-bound */
    return 0;
}

/* A kernel's name with every C++ scalar type replaced by its size in bytes ("@1", "@2", ...): kernels that
 * differ only in element type of the same size (FillFunctor<short> and FillFunctor<unsigned short>, an add
 * on float and on int) share it. Longer spellings come first. An Inductor kernel's name loses its trailing
 * number, which counts the kernels of its graph: when one autotuning choice differs under emulation (vLLM's
 * Qwen1.5-MoE graph pads a GEMM on the real card only, vllm_moe_kernels_2026-12-04), every later kernel
 * of the graph gets another number, and its rows are found under the real card's. */
static const struct { const char *type; const char *size; } scalar_types[] = {
    {"unsigned long long", "@8"}, {"unsigned long", "@8"}, {"unsigned int", "@4"}, {"unsigned short", "@2"},
    {"unsigned char", "@1"}, {"signed char", "@1"}, {"long long", "@8"},
    {"c10::complex<c10::Half>", "@4"}, {"c10::complex<float>", "@8"}, {"c10::complex<double>", "@16"},
    {"c10::Float8_e4m3fnuz", "@1"}, {"c10::Float8_e5m2fnuz", "@1"}, {"c10::Float8_e4m3fn", "@1"},
    {"c10::Float8_e5m2", "@1"}, {"c10::Float8_e8m0fnu", "@1"}, {"c10::BFloat16", "@2"}, {"c10::Half", "@2"},
    {"__nv_bfloat16", "@2"}, {"__half", "@2"}, {"int8_t", "@1"}, {"uint8_t", "@1"}, {"int16_t", "@2"},
    {"int32_t", "@4"}, {"uint32_t", "@4"}, {"int64_t", "@8"}, {"uint64_t", "@8"},
    {"bool", "@1"}, {"char", "@1"}, {"short", "@2"}, {"int", "@4"}, {"float", "@4"}, {"long", "@8"},
    {"double", "@8"},
};

static int ident_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; }

static char *size_signature(const char *name) {
    size_t n = strlen(name);
    char *out = malloc(n + 1), *o = out;   /* a size token is never longer than the type it replaces */
    if (!out) return NULL;
    for (size_t i = 0; i < n;) {
        int boundary = i == 0 || (!ident_char(name[i - 1]) && name[i - 1] != ':');
        size_t used = 0;
        for (size_t t = 0; boundary && t < sizeof scalar_types / sizeof *scalar_types; t++) {
            size_t l = strlen(scalar_types[t].type);
            if (!strncmp(name + i, scalar_types[t].type, l) && !ident_char(name[i + l])) {
                size_t sl = strlen(scalar_types[t].size);
                memcpy(o, scalar_types[t].size, sl);
                o += sl;
                used = l;
                break;
            }
        }
        if (used) { i += used; continue; }
        if (name[i] == ' ' && name[i + 1] == '>') { i++; continue; }   /* "complex<float> >" -> "@8>" */
        *o++ = name[i++];
    }
    *o = 0;
    if (!strncmp(out, "triton_", 7)) {   /* triton_poi_fused_add_3 -> triton_poi_fused_add */
        char *e = o;
        while (e > out && e[-1] >= '0' && e[-1] <= '9') e--;
        if (e < o && e > out + 7 && e[-1] == '_') e[-1] = 0;
    }
    return out;
}

/* The recorded kernel names by their sized type signatures, for the sibling layer (signature first, so that
 * first_named() finds a signature's entries) */
typedef struct { char *sig; const char *name; } sibling;
static sibling *siblings; static size_t nsibling;

static int sibling_cmp(const void *a, const void *b) {
    const sibling *x = a, *y = b;
    int c = strcmp(x->sig, y->sig);
    return c ? c : strcmp(x->name, y->name);
}

static void index_siblings(void) {
    for (size_t i = 0; i < nkern; i++) {
        if (i > 0 && !strcmp(kerns[i].name, kerns[i - 1].name)) continue;
        char *sig = size_signature(kerns[i].name);
        if (!sig || !strcmp(sig, kerns[i].name)) { free(sig); continue; }   /* no scalar type in the name */
        sibling e = {sig, kerns[i].name};
        PUSH(siblings, nsibling, e);
    }
    qsort(siblings, nsibling, sizeof *siblings, sibling_cmp);
}

/* A sibling's time for this launch: the same kernel recorded on element types of the same sizes, or the same
 * Inductor fusion under another number (the first
 * by name whose rows cover the launch, else the first with rows of its block shape; *weak as kern_interp's).
 * Other sizes are not used: at one launch shape a fill of floats and one of bfloat16s differ by 1.45x, and
 * copies or casts between types differ more. 0 when there is none. */
static double sibling_interp(const char *name, const tw_op *op, int *layer, double *weak) {
    *weak = 0;
    char *sig = size_signature(name);
    if (!sig) return 0;
    double best = 0;
    for (size_t i = first_named(siblings, nsibling, sizeof *siblings, sig); i < nsibling && !strcmp(siblings[i].sig, sig); i++) {
        double w;
        int l;
        if (!strcmp(siblings[i].name, name)) continue;
        double ns = kern_interp(siblings[i].name, op, &l, &w);
        if (ns > 0 && (best <= 0 || w == 0)) { best = ns; *weak = w; }
        if (ns > 0 && w == 0) break;
    }
    free(sig);
    if (best > 0) *layer = TW_LAYER_SIBLING;
    return best;
}

/* An Inductor kernel launched with another autotuning config than its rows were measured with. Inductor
 * autotunes a pointwise kernel's (num_warps, XBLOCK) by timing the candidates, here on the emulator's own
 * predictions, so the pick can differ from the real card's (triton_poi_fused_mul_silu_slice_0 of the
 * Qwen1.5-MoE graph: 8-warp blocks of 512 there, 4-warp blocks of 1024 here, whose only rows were one-wave
 * launches: 88% short in 8192-token prefills). A config seen launched in this process (note_config in
 * kernel.c) tells its XBLOCK; the launch's xnumel over that XBLOCK is the grid it would have had, whose rows
 * (its own, or with `siblings` a sibling's) give the time: the same elements, another tiling. 0 when no config
 * known here has rows that cover the launch; *weak as kern_interp's. */
static double config_interp(const char *name, const tw_op *op, int siblings, int *layer, double *weak) {
    const tw_kernel *k = op->kernel;
    int n = __atomic_load_n(&k->nconfigs, __ATOMIC_ACQUIRE);
    uint32_t threads = op->block[0] * op->block[1] * op->block[2];
    double best = 0;
    *weak = 0;
    for (int i = 0; i < n; i++) {
        if (k->config_threads[i] == threads) continue;
        tw_op other = *op;
        int64_t g = (op->rows[0] + k->config_xblock[i] - 1) / k->config_xblock[i];
        other.grid[0] = (uint32_t)g; other.grid[1] = other.grid[2] = 1;
        other.block[0] = k->config_threads[i]; other.block[1] = other.block[2] = 1;
        double w;
        int l;
        double ns = siblings ? sibling_interp(name, &other, &l, &w) : kern_interp(name, &other, &l, &w);
        if (ns > 0 && (best <= 0 || (*weak > 0 && w == 0))) { best = ns; *weak = w; }
        if (best > 0 && *weak == 0) break;
    }
    if (best > 0) *layer = TW_LAYER_CONFIG;
    return best;
}

/* A kernel without an annotation, by its demangled name: its own measured launches (kern_interp); for an
 * Inductor kernel, those of its other autotuning configs (config_interp); a sibling's (the same kernel on
 * other element types of the same sizes, or the same fusion under another number) where it has none, or
 * where the launch is far larger than its largest, latency-bound row. A time scaled up from such a row is
 * capped by the launch's roofline (but not below that row). A measured time is the kernel's own execution; kgap, the
 * time a back-to-back launch adds, is added to it. */
static double kern_predict(const tw_gpu_spec *spec, const tw_op *op, int *layer) {
    const char *name = op->kernel->pretty ? op->kernel->pretty : op->kernel->name;
    if (op->rows[0] > 0 && nkrow) {
        double ns = krow_predict(name, op, layer);
        if (ns > 0) return transfer(spec, op, (ns + kgap_ns) * 1e-9);
    }
    /* the kernel's own rows at its block shape, then (Inductor) at its other configs' block shapes, then its
     * siblings' at its block shape, then at the other configs': the first that covers the launch */
    double weak;
    double ns = kern_interp(name, op, layer, &weak);
    int configs = op->ptr_args && op->kernel->nconfigs > 1;
    for (int step = 0; step < 3 && (ns <= 0 || weak > 0); step++) {
        int l;
        double w, alt = step == 1 ? sibling_interp(name, op, &l, &w)
                      : configs ? config_interp(name, op, step == 2, &l, &w) : 0;
        if (alt > 0 && (ns <= 0 || w == 0)) { ns = alt; weak = w; *layer = l; }
    }
    if (ns > 0 && weak == 0) return transfer(spec, op, (ns + kgap_ns) * 1e-9);
    /* an Inductor kernel with no rows that cover it (another model's fusion): the model fitted over the extents
     * and tensor arguments of the recorded ones (fit_inductor.py), which is also the cap of a weak guess */
    double fit = have_inductor_model && op->ptr_args ? fitted_roofline(inductor_model, profiled, op) * 1e9 : 0;
    if (ns <= 0) {
        if (fit <= 0) return 0;
        *layer = TW_LAYER_NEAREST;
        return transfer(spec, op, fit * 1e-9);
    }
    /* weak: capped (the fitted model's times hold the gap that is added below) */
    double roof = fit > 0 ? fit - kgap_ns : tw_roofline_s(profiled, op) * 1e9;
    double est = roof > weak ? roof : weak;
    if (est < ns) ns = est;
    return transfer(spec, op, (ns + kgap_ns) * 1e-9);
}

/* cuBLAS's own GEMM whose operand or output rows do not start on 16-byte boundaries (a leading dimension
 * that is no multiple of 8 bf16 elements: 60 experts, a 4092-wide projection) runs kernels 2-4x slower than
 * its aligned neighbour from a few hundred tokens up (predictors/data/h200/gemm_align_2026-12-04); one token
 * takes the GEMV path either way. Rows measured at the shape itself already have it. */
static int misaligned(const tw_op *op) {
    const tw_annotation *a = &op->ann;
    if (a->u.gemm.source != TW_GEMM_BLAS || a->u.gemm.n <= 1) return 0;
    int t = a->u.gemm.a_type;
    int64_t eb = t == 0 ? 4 : (t == 2 || t == 14) ? 2 : (t == 28 || t == 29 || t == 3 || t == 8) ? 1 : 0;
    if (!eb) return 0;
    int64_t lda = a->u.gemm.trans_a ? a->u.gemm.k : a->u.gemm.m, ldb = a->u.gemm.trans_b ? a->u.gemm.n : a->u.gemm.k;
    return (lda * eb) % 16 || (ldb * eb) % 16 || (a->u.gemm.m * eb) % 16;
}

static double blas_gemm_predict(const tw_gpu_spec *spec, const tw_op *op, int *layer) {
    double s = gemm_predict(spec, op, layer);
    /* then the fitted floor (fit_gemm_align.py): t0 + max(bytes / (eff_m bw), flops / (eff_c peak)) */
    if (s > 0 && have_align_model && (*layer & ~TW_LAYER_SUSTAINED) != TW_LAYER_EXACT && misaligned(op)) {
        double f = fitted_roofline(align_model, spec, op);
        if (f > s) s = f;
    }
    return s;
}

double tw_profile_kgap_ns(void) {
    pthread_once(&once, load);
    return kgap_ns;
}

const tw_gpu_spec *tw_profile_card(void) {
    pthread_once(&once, load);
    return profiled;
}

double tw_profile_predict_s(const tw_gpu_spec *spec, const tw_op *op, int *layer) {
    pthread_once(&once, load);
    int dummy;
    if (!layer) layer = &dummy;
    int gemm = op->kind == TW_OP_KERNEL && op->ann.kind == TW_ANN_GEMM && ngemm;
    int attn = op->kind == TW_OP_KERNEL && op->ann.kind == TW_ANN_ATTENTION && nattn;
    int copy = (op->kind == TW_OP_MEMCPY || op->kind == TW_OP_MEMSET) && ncopy;
    int kern = op->kind == TW_OP_KERNEL && op->ann.kind == TW_ANN_NONE && op->kernel && (nkern || nkrow);
    if (!gemm && !attn && !copy && !kern) return 0;
    uint64_t key = op_key(op);
    centry *c = &cache[key & (CACHE_SLOTS - 1)];
    /* an Inductor kernel's prediction is redone once another of its configs has been seen (config_interp) */
    unsigned gen = kern && op->ptr_args ? __atomic_load_n(&tw_inductor_configs_gen, __ATOMIC_ACQUIRE) : 0;
    pthread_mutex_lock(&cache_lock);
    if (c->key == key && c->spec == spec && c->gen == gen) {
        double s = c->s;
        *layer = c->layer;
        pthread_mutex_unlock(&cache_lock);
        return s;
    }
    pthread_mutex_unlock(&cache_lock);
    tw_charge_pause();   /* a miss is the emulator's work: the real launch path does not pay it */
    double s = gemm ? blas_gemm_predict(spec, op, layer) : attn ? attn_predict(spec, op, layer)
             : copy ? copy_predict(spec, op, layer) : kern_predict(spec, op, layer);
    tw_charge_resume();
    if (s <= 0) { s = 0; *layer = TW_LAYER_ROOFLINE; }
    /* misses are cached too: a kernel the profile lacks is looked up once, not at every launch */
    pthread_mutex_lock(&cache_lock);
    *c = (centry){key, spec, s, *layer, gen};
    pthread_mutex_unlock(&cache_lock);
    return s;
}

const tw_gpu_spec *tw_profile_attn_step(double coef[5]) {
    pthread_once(&once, load);
    if (!have_attn_step || !profiled) return NULL;
    memcpy(coef, attn_step, sizeof attn_step);
    return profiled;
}

uint64_t tw_profile_host_cost(tw_host_cost which) {
    pthread_once(&once, load);
    return which < TW_HOST_NCOSTS ? host_costs[which] : 0;
}
