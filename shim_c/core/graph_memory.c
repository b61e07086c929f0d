/* Device memory the driver takes for executable graphs.
 *
 * Why: vLLM sizes its KV cache from cudaMemGetInfo after capturing its CUDA graphs (one graph per batch size
 * in FULL mode, one per layer and size in PIECEWISE mode: 3,366 graphs for a 64-layer model). On the H200
 * those graphs took 1.02 GiB of free memory, torch's graph pool 0.47 of it (vllm_32b_2026-12-03a): the
 * rest is the driver's, which torch never sees, and the emulated KV cache came out 1.15% too large.
 *
 * Model (predictors/data/h200/graph_memory_2026-12-03: G graphs of N one-element adds, free memory before
 * and after instantiation, 16 trials in one process): the driver keeps two pools, one for executable
 * graphs (about 114 KB each) and one for their nodes (about 2.4 KB each). Each grows in 2 MiB chunks to
 * the most it has held at once and never shrinks (destroying the graphs frees nothing); the context starts
 * with 4 MiB in each (part of the context's reservation). This reproduces every trial within 4 MiB
 * (209 chunks of growth in all, 2 off).
 */
#include <pthread.h>
#include "internal.h"
#include "graph_internal.h"

#define CHUNK (2ull << 20)
#define EXEC_BYTES 114000ull
#define NODE_BYTES 2425ull
#define START_BYTES (4ull << 20)

typedef struct { uint64_t live, cap; } pool;
static pool pools[TW_MAX_DEVICES][2];   /* [0]: executable graphs, [1]: their nodes */
static pthread_mutex_t pools_mu = PTHREAD_MUTEX_INITIALIZER;   /* its own: instantiation holds no other lock */

static uint64_t chunks(uint64_t b) { return (b + CHUNK - 1) / CHUNK * CHUNK; }

/* What the two pools need beyond their capacity once `execs` graphs and `nodes` nodes are added (both may
 * be negative for a removal or an update that shrinks). Returns the error of the reservation, if any. */
static tw_err pools_add(int dev, int64_t execs, int64_t nodes) {
    if (dev < 0 || dev >= TW_MAX_DEVICES) return TW_OK;
    pthread_mutex_lock(&pools_mu);
    pool *p = pools[dev];
    if (!p[0].cap) p[0].cap = p[1].cap = START_BYTES;
    uint64_t live[2] = {p[0].live + execs * (int64_t)EXEC_BYTES, p[1].live + nodes * (int64_t)NODE_BYTES};
    uint64_t grow = 0, cap[2];
    for (int i = 0; i < 2; i++) {
        cap[i] = live[i] > p[i].cap ? chunks(live[i]) : p[i].cap;
        grow += cap[i] - p[i].cap;
    }
    tw_err e = grow ? tw_mem_reserve_driver(dev, grow) : TW_OK;
    for (int i = 0; !e && i < 2; i++) { p[i].live = live[i]; p[i].cap = cap[i]; }
    pthread_mutex_unlock(&pools_mu);
    return e;
}

tw_err tw_graph_memory_instantiate(int dev, size_t nodes) { return pools_add(dev, 1, (int64_t)nodes); }
tw_err tw_graph_memory_update(int dev, size_t old_nodes, size_t nodes) {
    return pools_add(dev, 0, (int64_t)nodes - (int64_t)old_nodes);
}
void tw_graph_memory_destroy(int dev, size_t nodes) { (void)pools_add(dev, -1, -(int64_t)nodes); }
