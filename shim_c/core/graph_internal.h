/* Shared between stream.c, event.c and graph.c: captures and graph internals. */
#ifndef TW_GRAPH_INTERNAL_H
#define TW_GRAPH_INTERNAL_H
#include "tw/core.h"

typedef struct tw_capture tw_capture;

/* with tw_lock held */
tw_err tw_capture_append(tw_capture *c, tw_stream *s, const tw_op *op);
void tw_capture_invalidate(tw_capture *c);
void tw_capture_join(tw_capture *c, tw_stream *s);

tw_capture *tw_stream_capture(const tw_stream *s);
void tw_stream_set_capture(tw_stream *s, tw_capture *c);
int tw_stream_is_legacy(const tw_stream *s);
/* a zero-length operation at the end of s: returns when it completes (for event records) */
uint64_t tw_stream_place_marker(tw_stream *s);
/* s waits (on the device) until t */
void tw_stream_advance_to(tw_stream *s, uint64_t t);

void tw_op_side_effects(const tw_op *op, uint64_t start);
void tw_graph_exec_side_effects(const tw_graph_exec *x, uint64_t start);
uint64_t tw_graph_exec_duration(const tw_graph_exec *x);
uint64_t tw_graph_exec_kernels(const tw_graph_exec *x);
/* the replay's node time by predictor layer slot (summed when the graph is laid out), added to acc[TW_NLAYERS] */
void tw_graph_exec_layer_busy(const tw_graph_exec *x, uint64_t *acc);
/* the replay's time in compute-bound nodes, the part of it the power cap stretches, and the power its nodes
 * draw at full clock over an idle card's, averaged over the replay (power.c) */
void tw_graph_exec_hot(const tw_graph_exec *x, uint64_t *hot, uint64_t *stretchable, double *power);
/* the driver's device memory for executable graphs (graph_memory.c) */
tw_err tw_graph_memory_instantiate(int dev, size_t nodes);
tw_err tw_graph_memory_update(int dev, size_t old_nodes, size_t nodes);
void tw_graph_memory_destroy(int dev, size_t nodes);
#endif
