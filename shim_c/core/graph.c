/* CUDA graphs: stream capture, explicit graphs, instantiation and launch.
 *
 * A captured operation is copied into the graph as a node. Instantiation predicts every node once and
 * keeps the total, the number of kernels and the nodes with host-visible effects (copies, memsets, host
 * functions), so that a launch costs one timeline placement whatever the graph's size.
 *
 * Branches. A graph captured over several streams (fork: an event recorded on the capturing stream and
 * waited on by another; join: the reverse) runs its branches at once on the real GPU: vLLM's MoE layers run
 * the shared experts on a second stream beside the routed ones, and in the H200's decode graphs of a
 * Qwen1.5-MoE-shaped model the step's GPU activity spans 2.63 ms against 3.28 ms of kernel time
 * (predictors/data/h200/vllm_moe_kernels_2026-12-04). Each captured node keeps the stream it was captured on
 * (its lane) and each wait the record it waits for; a replay lays the nodes out as that DAG: a node starts
 * when the one before it on its lane has ended and, for a wait, when the awaited record was reached. The
 * branches share the memory bandwidth: while nodes of several lanes overlap, each moves at 1/S of its own
 * pace where S > 1 is the sum of their demands (a node's memory time at the device's bandwidth over its
 * predicted time: a decode GEMM that streams its weights near the rate asks ~0.7; kernels without an
 * annotation ask nothing). An estimate: in that recording, at one request, the routed experts' first GEMM
 * ran 14% longer beside the shared expert's GEMMs than alone, where this gives it about 30%.
 * Nodes added through the explicit graph API share one lane (run back to back).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "graph_internal.h"

#define GRAPH_MAGIC 0x54574752u /* "TWGR" */
#define EXEC_MAGIC 0x54574758u  /* "TWGX" */

struct tw_graph_node { tw_op op; tw_graph *owner; const void *lane; };   /* lane: the capturing stream */

struct tw_graph {
    uint32_t magic;
    int dev;
    tw_graph_node **nodes;
    size_t n, cap;
};

struct tw_graph_exec {
    uint32_t magic;
    int dev;
    size_t *stepnodes, nstep;   /* nodes timed from the step context, re-predicted when it changes */
    uint64_t step_gen;
    tw_op *ops;
    size_t n;
    size_t *effects;          /* indices of nodes with host-visible effects */
    size_t neffects;
    uint64_t *offsets;        /* start of each node relative to the launch */
    int32_t *after;           /* a wait node: the index of the record node it waits for; else -1 */
    uint32_t nlanes;          /* lanes: the streams of its capture */
    /* each node's next on its lane (-1: none), each lane's first; each node's demand on the memory bandwidth
     * when it runs alone (0-1), its time in the last schedule (longer than its own where lanes overlapped),
     * and lay_out_lanes' scratch (a node's remaining time; reached) */
    int32_t *lane_next, lane_first[64];
    float *demand;
    uint64_t *took;
    double *left;
    unsigned char *reached;
    uint64_t total, kernels;
    size_t nodes;             /* the nodes the driver would have: not the capture's event records and waits */
    uint64_t hot, stretchable;  /* time of compute-bound nodes, and of those the power cap stretches (power.c) */
    double power;             /* the power its nodes draw at full clock over an idle card's, averaged over the
                               * replay (W; power.c) */
    uint64_t layer_ns[TW_NLAYERS];   /* node time by predictor layer slot (a replay's share of the report) */
    int uploaded;             /* the driver has uploaded it (cudaGraphUpload, or its first launch) */
};

struct tw_capture {
    tw_graph *graph;
    uint64_t id;
    int mode;
    int invalidated;
    tw_stream *origin;
    tw_stream **streams;      /* streams that joined, to release at the end */
    size_t nstreams, capstreams;
};

static uint64_t next_capture_id = 1;
static __thread int thread_capture_mode; /* cudaStreamCaptureModeGlobal = 0 */

static tw_err graph_append(tw_graph *g, const tw_op *op, const void *lane, tw_graph_node **out) {
    if (g->n == g->cap) {
        size_t nc = g->cap ? g->cap * 2 : 64;
        tw_graph_node **nn = realloc(g->nodes, nc * sizeof *nn);
        if (!nn) return TW_ERR_OUT_OF_MEMORY;
        g->nodes = nn; g->cap = nc;
    }
    tw_graph_node *node = malloc(sizeof *node);
    if (!node) return TW_ERR_OUT_OF_MEMORY;
    node->op = *op;
    node->owner = g;
    node->lane = lane;
    g->nodes[g->n++] = node;
    if (out) *out = node;
    return TW_OK;
}

tw_err tw_graph_create(tw_graph **out) {
    tw_init();
    if (!out) return TW_ERR_INVALID_VALUE;
    tw_graph *g = calloc(1, sizeof *g);
    if (!g) return TW_ERR_OUT_OF_MEMORY;
    g->magic = GRAPH_MAGIC;
    g->dev = tw_get_device();
    *out = g;
    return TW_OK;
}

tw_err tw_graph_destroy(tw_graph *g) {
    if (!g || g->magic != GRAPH_MAGIC) return TW_ERR_INVALID_HANDLE;
    for (size_t i = 0; i < g->n; i++) free(g->nodes[i]);
    free(g->nodes);
    g->magic = 0;
    free(g);
    return TW_OK;
}

size_t tw_graph_num_nodes(const tw_graph *g) { return g && g->magic == GRAPH_MAGIC ? g->n : 0; }
tw_graph_node *tw_graph_node_at(tw_graph *g, size_t i) { return g && g->magic == GRAPH_MAGIC && i < g->n ? g->nodes[i] : NULL; }

const tw_op *tw_graph_node_op(const tw_graph_node *n) { return n ? &n->op : NULL; }

tw_err tw_graph_add_op(tw_graph *g, const tw_op *op, tw_graph_node **out) {
    if (!g || g->magic != GRAPH_MAGIC || !op) return TW_ERR_INVALID_VALUE;
    TW_LOCK();
    tw_err e = graph_append(g, op, NULL, out);
    TW_UNLOCK();
    return e;
}

/* ---------------------------------------------------------------- capture (lock held where noted) */
static int active_captures;  /* under the lock; read without it by tw_captures_active() */

int tw_captures_active(void) { return __atomic_load_n(&active_captures, __ATOMIC_RELAXED); }

tw_err tw_capture_begin(tw_stream *s, int mode) {
    if (!s) return TW_ERR_INVALID_HANDLE;
    if (tw_stream_is_legacy(s)) return TW_ERR_CAPTURE_UNSUPPORTED;
    tw_capture *c = calloc(1, sizeof *c);
    if (!c) return TW_ERR_OUT_OF_MEMORY;
    tw_graph *g;
    tw_err e = tw_graph_create(&g);
    if (e) { free(c); return e; }
    g->dev = tw_stream_device(s);
    TW_LOCK();
    if (tw_stream_capture(s)) { TW_UNLOCK(); tw_graph_destroy(g); free(c); return TW_ERR_ILLEGAL_STATE; }
    c->graph = g;
    c->id = next_capture_id++;
    c->mode = mode;
    c->origin = s;
    tw_capture_join(c, s);
    __atomic_add_fetch(&active_captures, 1, __ATOMIC_RELAXED);
    TW_UNLOCK();
    return TW_OK;
}

void tw_capture_join(tw_capture *c, tw_stream *s) {
    if (c->nstreams == c->capstreams) {
        size_t nc = c->capstreams ? c->capstreams * 2 : 4;
        tw_stream **ns = realloc(c->streams, nc * sizeof *ns);
        if (!ns) { c->invalidated = 1; return; }
        c->streams = ns; c->capstreams = nc;
    }
    c->streams[c->nstreams++] = s;
    tw_stream_set_capture(s, c);
}

tw_err tw_capture_append(tw_capture *c, tw_stream *s, const tw_op *op) {
    if (c->invalidated) return TW_ERR_CAPTURE_INVALIDATED;
    return graph_append(c->graph, op, s, NULL);
}

void tw_capture_invalidate(tw_capture *c) { c->invalidated = 1; }

tw_err tw_capture_end(tw_stream *s, tw_graph **out) {
    if (!s) return TW_ERR_INVALID_HANDLE;
    TW_LOCK();
    tw_capture *c = tw_stream_capture(s);
    if (!c) { TW_UNLOCK(); return TW_ERR_ILLEGAL_STATE; }
    if (c->origin != s) { TW_UNLOCK(); return TW_ERR_CAPTURE_UNMATCHED; }
    for (size_t i = 0; i < c->nstreams; i++) tw_stream_set_capture(c->streams[i], NULL);
    __atomic_sub_fetch(&active_captures, 1, __ATOMIC_RELAXED);
    int bad = c->invalidated;
    tw_graph *g = c->graph;
    TW_UNLOCK();
    free(c->streams);
    free(c);
    if (bad) { tw_graph_destroy(g); if (out) *out = NULL; return TW_ERR_CAPTURE_INVALIDATED; }
    if (out) *out = g; else tw_graph_destroy(g);
    return TW_OK;
}

tw_capture_status tw_capture_status_of(tw_stream *s, uint64_t *id, tw_graph **graph) {
    if (!s) return TW_CAPTURE_NONE;
    TW_LOCK();
    tw_capture *c = tw_stream_capture(s);
    tw_capture_status st = !c ? TW_CAPTURE_NONE : c->invalidated ? TW_CAPTURE_INVALIDATED : TW_CAPTURE_ACTIVE;
    if (c && id) *id = c->id;
    if (c && graph) *graph = c->graph;
    TW_UNLOCK();
    return st;
}

int tw_capture_exchange_mode(int mode) {
    int old = thread_capture_mode;
    thread_capture_mode = mode;
    return old;
}

/* ---------------------------------------------------------------- instantiate and launch */
/* Several lanes: an event-driven schedule. At each moment every lane runs its next node once the node before
 * it has ended and, for a wait, its record has been reached; running nodes progress at 1/S of their own
 * pace (S: the sum of their bandwidth demands, at least 1) until the next one ends. */
static uint64_t lay_out_lanes(tw_graph_exec *x) {
    uint32_t L = x->nlanes;
    int32_t cur[64];
    int running[64];
    memset(x->reached, 0, x->n);
    for (uint32_t l = 0; l < L; l++) { cur[l] = x->lane_first[l]; running[l] = 0; }
    double t = 0;
    for (;;) {
        int progress = 1;
        while (progress) {      /* start what can start now; zero-time nodes pass at once */
            progress = 0;
            for (uint32_t l = 0; l < L; l++) {
                int32_t i = cur[l];
                if (running[l] || i < 0) continue;
                if (x->after[i] >= 0 && !x->reached[x->after[i]]) continue;
                x->offsets[i] = (uint64_t)(t + 0.5);
                x->left[i] = (double)x->ops[i].duration;
                if (x->ops[i].duration == 0) {
                    x->reached[i] = 1; x->took[i] = 0; cur[l] = x->lane_next[i]; progress = 1;
                } else {
                    running[l] = 1;
                }
            }
        }
        double S = 0, step = -1;
        for (uint32_t l = 0; l < L; l++) if (running[l]) S += x->demand[cur[l]];
        double rate = S > 1 ? 1 / S : 1;
        for (uint32_t l = 0; l < L; l++)
            if (running[l] && (step < 0 || x->left[cur[l]] / rate < step)) step = x->left[cur[l]] / rate;
        if (step < 0) break;    /* nothing runs: done (or a wait whose record never comes: left where it is) */
        t += step;
        for (uint32_t l = 0; l < L; l++) {
            if (!running[l]) continue;
            int32_t i = cur[l];
            x->left[i] -= step * rate;
            if (x->left[i] <= 0.5) {
                x->reached[i] = 1;
                x->took[i] = (uint64_t)(t + 0.5) - x->offsets[i];
                running[l] = 0;
                cur[l] = x->lane_next[i];
            }
        }
    }
    return (uint64_t)(t + 0.5);
}

/* A replay's schedule: each node's offset from the launch (and its time in it). One lane: back to back in
 * capture order. Several: lay_out_lanes. */
static void lay_out(tw_graph_exec *x) {
    uint64_t total = 0;
    memset(x->layer_ns, 0, sizeof x->layer_ns);
    if (x->nlanes > 1) {
        total = lay_out_lanes(x);
    } else {
        for (size_t i = 0; i < x->n; i++) {
            x->offsets[i] = total;
            x->took[i] = x->ops[i].duration;
            total += x->ops[i].duration;
        }
    }
    for (size_t i = 0; i < x->n; i++) {
        const tw_op *op = &x->ops[i];
        if (op->kind == TW_OP_KERNEL || op->kind == TW_OP_MEMCPY || op->kind == TW_OP_MEMSET)
            x->layer_ns[tw_layer_slot(op->layer)] += op->duration;
    }
    x->total = total;
    const tw_gpu_spec *spec = tw_power_enabled() ? tw_device_spec(x->dev) : NULL;   /* replays re-lay out often */
    x->hot = x->stretchable = 0;
    double energy = 0;
    for (size_t i = 0; spec && i < x->n; i++) {
        const tw_op *op = &x->ops[i];
        double share;
        energy += tw_power_draw(spec, op, op->duration, &share) * (double)op->duration;
        if (share > 0) {
            x->hot += op->duration;
            if (tw_power_stretchable(op)) x->stretchable += (uint64_t)((double)op->duration * share);
        }
    }
    x->power = total ? energy / (double)total : 0;   /* where lanes overlap, their nodes' power adds up */
}

/* A node's demand on the memory bandwidth when it runs alone: its memory time at the device's rate over its
 * predicted time (annotated GEMMs, MoE and attention launches), 0 for the rest. */
static float bandwidth_demand(int dev, const tw_op *op) {
    const tw_gpu_spec *spec = tw_device_spec(dev);
    double tc, tm;
    if (!spec || !op->duration || op->kind != TW_OP_KERNEL || !tw_annotated_times(spec, op, &tc, &tm)) return 0;
    double d = tm * 1e9 / (double)op->duration;
    return d > 1 ? 1.0f : (float)d;
}

/* A captured event record or wait is an edge of the real graph, not a node: what a graph costs in device
 * memory and upload time counts the others. */
static size_t real_nodes(const tw_graph *g) {
    size_t n = 0;
    for (size_t i = 0; i < g->n; i++)
        n += g->nodes[i]->op.kind != TW_OP_EVENT_RECORD && g->nodes[i]->op.kind != TW_OP_EVENT_WAIT;
    return n;
}

/* The DAG of a graph's nodes: lanes numbered in order of first use, each node's next on its lane, each wait
 * tied to the latest record of its event before it (capture order; a record outside the graph leaves the
 * wait without a dependency). */
static void link_nodes(tw_graph *g, uint32_t *lane, int32_t *after, uint32_t *nlanes, int32_t *lane_next,
                       int32_t *lane_first) {
    const void *lanes[64];
    int32_t last[64];
    uint32_t nl = 0;
    for (size_t i = 0; i < g->n; i++) {
        const tw_graph_node *nd = g->nodes[i];
        uint32_t l = 0;
        while (l < nl && lanes[l] != nd->lane) l++;
        if (l == nl) {
            if (nl < 64) { lanes[nl++] = nd->lane; lane_first[l] = -1; last[l] = -1; }
            else l = 0;   /* more streams than that: the rest share the first lane (serialised) */
        }
        lane[i] = l;
        lane_next[i] = -1;
        if (last[l] >= 0) lane_next[last[l]] = (int32_t)i;
        else lane_first[l] = (int32_t)i;
        last[l] = (int32_t)i;
        after[i] = -1;
        if (nd->op.kind == TW_OP_EVENT_WAIT)
            for (size_t j = i; j-- > 0;)
                if (g->nodes[j]->op.kind == TW_OP_EVENT_RECORD && g->nodes[j]->op.event == nd->op.event) {
                    after[i] = (int32_t)j;
                    break;
                }
    }
    *nlanes = nl ? nl : 1;
}

static void exec_free_arrays(tw_graph_exec *x) {
    free(x->ops); free(x->effects); free(x->offsets); free(x->stepnodes); free(x->after); free(x->lane_next);
    free(x->demand); free(x->took); free(x->left); free(x->reached);
}

static tw_err exec_fill(tw_graph_exec *x, tw_graph *g) {
    size_t n = g->n ? g->n : 1;
    tw_graph_exec t = {0};   /* the new arrays, moved into x once all are there */
    uint32_t *lane = malloc(n * sizeof *lane);
    t.ops = malloc(n * sizeof *t.ops); t.effects = malloc(n * sizeof *t.effects);
    t.offsets = malloc(n * sizeof *t.offsets); t.stepnodes = malloc(n * sizeof *t.stepnodes);
    t.after = malloc(n * sizeof *t.after); t.lane_next = malloc(n * sizeof *t.lane_next);
    t.demand = malloc(n * sizeof *t.demand); t.took = malloc(n * sizeof *t.took);
    t.left = malloc(n * sizeof *t.left); t.reached = malloc(n);
    if (!lane || !t.ops || !t.effects || !t.offsets || !t.stepnodes || !t.after || !t.lane_next || !t.demand ||
        !t.took || !t.left || !t.reached) {
        free(lane);
        exec_free_arrays(&t);
        return TW_ERR_OUT_OF_MEMORY;
    }
    link_nodes(g, lane, t.after, &t.nlanes, t.lane_next, t.lane_first);
    free(lane);
    uint64_t kernels = 0;
    size_t ne = 0, ns = 0;
    for (size_t i = 0; i < g->n; i++) {
        tw_op *op = &t.ops[i];
        *op = g->nodes[i]->op;
        op->captured = 1;
        if (tw_step_dependent(op)) { t.stepnodes[ns++] = i; op->duration = 0; }
        if (!op->duration && op->kind != TW_OP_EVENT_RECORD && op->kind != TW_OP_EVENT_WAIT)
            op->duration = tw_predict_ex(g->dev, op, &op->layer);
        t.demand[i] = t.nlanes > 1 ? bandwidth_demand(g->dev, op) : 0;   /* read by lay_out_lanes only */
        if (op->kind == TW_OP_KERNEL || op->kind == TW_OP_COLLECTIVE) kernels++;
        if (op->kind == TW_OP_MEMCPY || op->kind == TW_OP_MEMSET || op->kind == TW_OP_HOST_FUNC) t.effects[ne++] = i;
    }
    exec_free_arrays(x);
    x->ops = t.ops; x->effects = t.effects; x->offsets = t.offsets; x->stepnodes = t.stepnodes; x->nstep = ns;
    x->after = t.after; x->lane_next = t.lane_next; x->demand = t.demand; x->took = t.took; x->left = t.left;
    x->reached = t.reached; x->nlanes = t.nlanes;
    memcpy(x->lane_first, t.lane_first, sizeof x->lane_first);
    x->step_gen = tw_step_generation();
    x->n = g->n; x->neffects = ne; x->kernels = kernels; x->dev = g->dev; x->nodes = real_nodes(g);
    lay_out(x);
    return TW_OK;
}

tw_err tw_graph_instantiate(tw_graph *g, tw_graph_exec **out) {
    if (!g || g->magic != GRAPH_MAGIC || !out) return TW_ERR_INVALID_VALUE;
    tw_graph_exec *x = calloc(1, sizeof *x);
    if (!x) return TW_ERR_OUT_OF_MEMORY;
    x->magic = EXEC_MAGIC;
    tw_err e = exec_fill(x, g);
    if (!e && (e = tw_graph_memory_instantiate(x->dev, x->nodes))) exec_free_arrays(x);
    if (e) { free(x); return e; }
    *out = x;
    return TW_OK;
}

tw_err tw_graph_exec_update(tw_graph_exec *x, tw_graph *g) {
    if (!x || x->magic != EXEC_MAGIC || !g || g->magic != GRAPH_MAGIC) return TW_ERR_INVALID_VALUE;
    size_t old = x->nodes, now = real_nodes(g);
    tw_err e = tw_graph_memory_update(g->dev, old, now);
    if (e) return e;
    if ((e = exec_fill(x, g))) (void)tw_graph_memory_update(g->dev, now, old);
    return e;
}

tw_err tw_graph_exec_destroy(tw_graph_exec *x) {
    if (!x || x->magic != EXEC_MAGIC) return TW_ERR_INVALID_HANDLE;
    x->magic = 0;
    tw_graph_memory_destroy(x->dev, x->nodes);
    exec_free_arrays(x);
    free(x);
    return TW_OK;
}

uint64_t tw_graph_exec_duration(const tw_graph_exec *x) { return x->total ? x->total : 1; }
uint64_t tw_graph_exec_kernels(const tw_graph_exec *x) { return x->kernels; }
void tw_graph_exec_layer_busy(const tw_graph_exec *x, uint64_t *acc) {
    for (int l = 0; l < TW_NLAYERS; l++) acc[l] += x->layer_ns[l];   /* summed by lay_out, not per replay */
}
void tw_graph_exec_hot(const tw_graph_exec *x, uint64_t *hot, uint64_t *stretchable, double *power) {
    *hot = x->hot;
    *stretchable = x->stretchable;
    *power = x->power;
}

void tw_graph_exec_side_effects(const tw_graph_exec *x, uint64_t start) {
    for (size_t i = 0; i < x->neffects; i++) {
        size_t k = x->effects[i];
        tw_op_side_effects(&x->ops[k], start + x->offsets[k]);
    }
}

/* A replay's nodes in a trace. A replay the power cap stretched (power.c: it ends later than its schedule)
 * shows the stretch on its stretchable nodes, and its schedule spread over its stretched time, so that the
 * nodes' times add up to what the replay took. */
void tw_graph_exec_trace(const tw_graph_exec *x, int dev, uint64_t stream_id, uint64_t start, uint64_t end,
                         uint64_t issued) {
    uint64_t extra = end > start + x->total ? end - start - x->total : 0;
    double per_ns = extra && x->stretchable ? (double)extra / (double)x->stretchable : 0;
    double scale = extra && x->total ? (double)(end - start) / (double)x->total : 1;
    const tw_gpu_spec *spec = per_ns > 0 ? tw_device_spec(x->dev) : NULL;
    for (size_t i = 0; i < x->n; i++) {
        const tw_op *op = &x->ops[i];
        if (op->kind == TW_OP_EVENT_RECORD || op->kind == TW_OP_EVENT_WAIT) continue;
        uint64_t d = x->took[i];
        double share = 0;
        if (spec && tw_power_stretchable(op)) tw_power_draw(spec, op, op->duration, &share);
        d += (uint64_t)((double)d * share * per_ns);
        uint64_t at = start + (uint64_t)((double)x->offsets[i] * scale);
        tw_record(dev, stream_id, op, at, at + d, issued);
    }
}

/* A full CUDA graph replays the same attention launches for every batch of its size: re-time those nodes
 * when the step context has changed since the last launch, and move every later node by the difference
 * (the offsets place the replay's copies and host functions, and its nodes in a trace; kept from
 * instantiation, a decode graph's nodes after the first attention layer were shown up to 1.7 ms early at
 * batch 64, overlapping the attention kernels, and the graph seemed to end before its real end). */
static void refresh_step_nodes(tw_graph_exec *x) {
    uint64_t gen = tw_step_generation();
    if (!x->nstep || gen == x->step_gen) return;
    x->step_gen = gen;
    int changed = 0;
    for (size_t j = 0; j < x->nstep; j++) {
        tw_op *op = &x->ops[x->stepnodes[j]];
        uint64_t d = tw_predict_ex(x->dev, op, &op->layer);
        changed |= d != op->duration;
        op->duration = d;
        if (x->nlanes > 1) x->demand[x->stepnodes[j]] = bandwidth_demand(x->dev, op);
    }
    if (changed) lay_out(x);
}

/* The driver uploads an executable graph to the device at cudaGraphUpload or, without one, at its first
 * launch, on the calling thread: measured on the H200 (predictors/data/h200/graph_upload_2026-11-30) at
 * about 1 us of host time per node, PyTorch's CUDAGraph (which does not upload) paying it at its first
 * replay. The profile's host graph_upload_ns + graph_upload_ns_per_node x nodes, once per executable. */
tw_err tw_graph_exec_upload(tw_graph_exec *x) {
    if (!x || x->magic != EXEC_MAGIC) return TW_ERR_INVALID_VALUE;
    if (__atomic_exchange_n(&x->uploaded, 1, __ATOMIC_ACQ_REL)) return TW_OK;
    tw_charge_add(tw_profile_host_cost(TW_HOST_GRAPH_UPLOAD) + tw_profile_host_cost(TW_HOST_GRAPH_UPLOAD_PER_NODE) * x->nodes);
    return TW_OK;
}

tw_err tw_graph_launch(tw_graph_exec *x, tw_stream *s) {
    if (!x || x->magic != EXEC_MAGIC) return TW_ERR_INVALID_VALUE;
    if (!s) return TW_ERR_INVALID_HANDLE;
    if (!__atomic_load_n(&x->uploaded, __ATOMIC_ACQUIRE)) tw_graph_exec_upload(x);
    refresh_step_nodes(x);
    tw_op op = {.kind = TW_OP_GRAPH, .exec = x, .label = "graph", .duration = tw_graph_exec_duration(x)};
    return tw_enqueue(s, &op);
}
