/* Shared internals of the fake libcudnn.so.9: handles, the backend descriptor store, the graph summary that
 * Execute turns into one timed launch, and the last-error message. Not exported. */
#ifndef TW_CUDNN_INTERNAL_H
#define TW_CUDNN_INTERNAL_H

#include <stdint.h>
#include <stddef.h>

#include "tw/core.h"
#include "cudnn_types.h"

#define TWDNN_LIB "cudnn"

/* ------------------------------------------------------------------ handles (handle.c) */
#define TWDNN_HANDLE_MAGIC 0x646e6e48u   /* "Hnnd" */
typedef struct twdnn_handle {
    uint32_t magic;
    int device;          /* the device current when cudnnCreate ran */
    void *stream;        /* cudaStream_t as the program gave it (NULL = legacy default) */
} twdnn_handle;

/* NULL for a handle that is not live. */
twdnn_handle *twdnn_handle_get(void *h);
/* The handle's stream as a core stream; NULL if the program's stream is not live. */
tw_stream *twdnn_handle_stream(twdnn_handle *h);

/* ------------------------------------------------------------------ last error (version.c) */
/* Records the message that cudnnGetLastErrorString returns (per thread, as in cuDNN 9) and returns status. */
int twdnn_fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *twdnn_status_name(int status);

/* ------------------------------------------------------------------ graph summary (graph.c) */
typedef enum {
    TWDNN_GRAPH_GENERIC = 0,   /* anything else: timed by a roofline over its matmuls/convs and bytes */
    TWDNN_GRAPH_SDPA_FWD,      /* scaled dot-product attention, forward (composite or unified node) */
    TWDNN_GRAPH_SDPA_BWD,      /* its backward */
    TWDNN_GRAPH_CONV_FWD,
    TWDNN_GRAPH_CONV_BWD_DATA,
    TWDNN_GRAPH_CONV_BWD_FILTER,
    TWDNN_GRAPH_MATMUL,
    TWDNN_GRAPH_NORM,
} twdnn_graph_kind;

typedef struct twdnn_graph_sum {
    twdnn_graph_kind kind;
    int n_ops;
    /* attention */
    int64_t batch, heads, kv_heads, q_len, kv_len, head_dim, head_dim_v;
    int causal;
    int dtype;              /* cudnnDataType_t of Q (or of the first real input) */
    /* roofline for everything that is not attention */
    double flops;
    double bytes;
    int64_t workspace;      /* bytes the plan asks the caller for */
    int32_t shared_mem;     /* bytes of shared memory its kernel uses (reported to the frontend's filter) */
} twdnn_graph_sum;

/* Analyses an operation-graph descriptor. Never fails: an unrecognised graph is TWDNN_GRAPH_GENERIC. */
struct twdnn_desc;
void twdnn_graph_analyze(struct twdnn_desc *opgraph, twdnn_graph_sum *out);
/* Text form (the execution plan's JSON representation) and back. */
int twdnn_graph_sum_to_json(const twdnn_graph_sum *s, char *buf, size_t len);
int twdnn_graph_sum_from_json(const char *json, size_t len, twdnn_graph_sum *out);
/* Enqueues the launch a plan with this summary stands for, on stream s. */
tw_err twdnn_graph_launch(const twdnn_graph_sum *s, tw_stream *st);

/* ------------------------------------------------------------------ descriptor store (backend.c) */
typedef struct twdnn_attr {
    int name;               /* cudnnBackendAttributeName_t */
    int type;               /* cudnnBackendAttributeType_t */
    int64_t count;
    void *data;             /* count elements; for descriptors an array of struct twdnn_desc* holding a reference */
} twdnn_attr;

#define TWDNN_DESC_MAGIC 0x63736544u     /* "Desc" */
typedef struct twdnn_desc {
    uint32_t magic;
    int type;               /* cudnnBackendDescriptorType_t */
    int finalized;
    int user_released;      /* cudnnBackendDestroyDescriptor was called */
    int refs;               /* the program's handle + one per attribute value that names it */
    int n_attrs, cap_attrs;
    twdnn_attr *attrs;
    twdnn_graph_sum *sum;   /* engine configs and plans: what the graph computes */
} twdnn_desc;

twdnn_desc *twdnn_desc_get(void *d);                     /* NULL unless a live descriptor */
const twdnn_attr *twdnn_desc_attr(const twdnn_desc *d, int name);
twdnn_desc *twdnn_desc_attr_desc(const twdnn_desc *d, int name, int64_t i); /* i-th descriptor value or NULL */
/* Integer value(s) of an attribute, whatever integer type it was set with; returns how many were read. */
int twdnn_desc_attr_ints(const twdnn_desc *d, int name, int64_t *out, int max);

/* ------------------------------------------------------------------ timing helpers (graph.c) */
/* Duration of a kernel that does flops FLOPs and moves bytes bytes on device dev (roofline with the catalog's
 * rates); dtype is a cudnnDataType_t that picks the FLOP rate. */
uint64_t twdnn_roofline_ns(int dev, double flops, double bytes, int dtype);
size_t twdnn_dtype_size(int dtype);
/* Enqueues one kernel named kernel_name (label: the API call) timed by the roofline above. */
tw_err twdnn_launch_roofline(tw_stream *st, const char *kernel_name, const char *label, double flops, double bytes,
                             int dtype);

#endif
