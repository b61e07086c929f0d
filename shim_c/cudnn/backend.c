/* The cuDNN backend (graph) API as a generic descriptor store.
 *
 * cudnn_frontend, compiled into libtorch_cuda, builds every cuDNN graph (SDPA, convolutions through the v8 API)
 * with six calls: create a descriptor of some type, set attributes on it, finalize it, read attributes back,
 * execute a plan with a variant pack, destroy. A descriptor here is therefore a bag of attributes kept by name
 * with their type and element count; reading one returns what was set. Only a handful of attributes are
 * computed rather than stored, and they are the ones cuDNN itself computes:
 *   - an engine heuristic's results (CUDNN_ATTR_ENGINEHEUR_RESULTS): one engine config per graph;
 *   - an operation graph's engine count, an engine's notes and knobs (none);
 *   - an engine config's and a plan's workspace and shared memory, from the analysis of the graph (graph.c);
 *   - a plan's JSON representation (enough of the analysis to rebuild the plan from it).
 * Descriptor-valued attributes follow cuDNN's rule: the setter keeps (here: references) the descriptor it is
 * given, and a getter copies the stored descriptor into descriptors the caller created beforehand. A
 * descriptor lives until the program destroyed it and no other descriptor refers to it, so a plan stays
 * valid after the frontend destroyed the engine config it was built from. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn_internal.h"

/* How many engines an operation graph has. cuDNN has dozens for some patterns; the frontend only needs
 * engine ids to be below this when it builds an engine by id. */
#define TWDNN_ENGINE_COUNT 1

static pthread_mutex_t store_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t type_size(int t)
{
    switch (t) {
    case TWDNN_TYPE_HANDLE:
    case TWDNN_TYPE_VOID_PTR:
    case TWDNN_TYPE_BACKEND_DESCRIPTOR: return sizeof(void *);
    case TWDNN_TYPE_BOOLEAN:                      /* C++ bool */
    case TWDNN_TYPE_CHAR: return 1;
    case TWDNN_TYPE_INT64:
    case TWDNN_TYPE_DOUBLE: return 8;
    case TWDNN_TYPE_FRACTION: return 16;          /* two int64: numerator, denominator */
    default: return 4;                            /* float, int32 and every enum type */
    }
}

static int is_int_type(int t)
{
    switch (t) {
    case TWDNN_TYPE_HANDLE: case TWDNN_TYPE_VOID_PTR: case TWDNN_TYPE_BACKEND_DESCRIPTOR:
    case TWDNN_TYPE_FLOAT: case TWDNN_TYPE_DOUBLE: case TWDNN_TYPE_CHAR: case TWDNN_TYPE_FRACTION:
        return 0;
    default:
        return 1;
    }
}

static int64_t read_int(const void *p, int t)
{
    switch (type_size(t)) {
    case 1: return *(const unsigned char *)p;
    case 8: return *(const int64_t *)p;
    default: return *(const int32_t *)p;
    }
}

twdnn_desc *twdnn_desc_get(void *p)
{
    twdnn_desc *d = p;
    return (d && d->magic == TWDNN_DESC_MAGIC) ? d : NULL;
}

/* ------------------------------------------------------------------ lifetime (store_lock held) */
static void desc_unref(twdnn_desc *d);

static void attr_clear(twdnn_attr *a)
{
    if (a->type == TWDNN_TYPE_BACKEND_DESCRIPTOR && a->data) {
        twdnn_desc **v = a->data;
        for (int64_t i = 0; i < a->count; i++)
            if (v[i])
                desc_unref(v[i]);
    }
    free(a->data);
    a->data = NULL;
    a->count = 0;
}

static void desc_clear(twdnn_desc *d)
{
    for (int i = 0; i < d->n_attrs; i++)
        attr_clear(&d->attrs[i]);
    d->n_attrs = 0;
    free(d->sum);
    d->sum = NULL;
    d->finalized = 0;
}

static void desc_unref(twdnn_desc *d)
{
    if (--d->refs > 0)
        return;
    desc_clear(d);
    free(d->attrs);
    d->magic = 0;
    free(d);
}

static twdnn_desc *desc_new(int type)
{
    twdnn_desc *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->magic = TWDNN_DESC_MAGIC;
    d->type = type;
    d->refs = 1;
    return d;
}

/* Drops the creator's reference, as cudnnBackendDestroyDescriptor does. */
static void desc_release(twdnn_desc *d)
{
    d->user_released = 1;
    desc_unref(d);
}

static twdnn_attr *attr_find(const twdnn_desc *d, int name)
{
    for (int i = 0; i < d->n_attrs; i++)
        if (d->attrs[i].name == name)
            return &d->attrs[i];
    return NULL;
}

/* Stores count elements of type under name, replacing any earlier value; descriptor values gain a reference. */
static int attr_store(twdnn_desc *d, int name, int type, int64_t count, const void *elems)
{
    size_t sz = type_size(type);
    void *copy = NULL;
    if (count > 0) {
        copy = malloc((size_t)count * sz);
        if (!copy)
            return TWDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
        memcpy(copy, elems, (size_t)count * sz);
        if (type == TWDNN_TYPE_BACKEND_DESCRIPTOR) {
            twdnn_desc **v = copy;
            for (int64_t i = 0; i < count; i++)
                if (v[i])
                    v[i]->refs++;
        }
    }
    twdnn_attr *a = attr_find(d, name);
    if (a) {
        attr_clear(a);
    } else {
        if (d->n_attrs == d->cap_attrs) {
            int cap = d->cap_attrs ? 2 * d->cap_attrs : 8;
            twdnn_attr *n = realloc(d->attrs, (size_t)cap * sizeof *n);
            if (!n) {
                twdnn_attr tmp = {name, type, count, copy};
                attr_clear(&tmp);
                return TWDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
            }
            d->attrs = n;
            d->cap_attrs = cap;
        }
        a = &d->attrs[d->n_attrs++];
        a->name = name;
    }
    a->type = type;
    a->count = count;
    a->data = copy;
    return TWDNN_STATUS_SUCCESS;
}

/* Makes dst a copy of src (cuDNN's rule for descriptor-valued getters). */
static int desc_copy_into(twdnn_desc *dst, const twdnn_desc *src)
{
    if (dst == src)
        return TWDNN_STATUS_SUCCESS;
    if (dst->type != src->type)
        return TWDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE;
    desc_clear(dst);
    for (int i = 0; i < src->n_attrs; i++) {
        const twdnn_attr *a = &src->attrs[i];
        int st = attr_store(dst, a->name, a->type, a->count, a->data);
        if (st != TWDNN_STATUS_SUCCESS)
            return st;
    }
    if (src->sum) {
        dst->sum = malloc(sizeof *dst->sum);
        if (!dst->sum)
            return TWDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
        *dst->sum = *src->sum;
    }
    dst->finalized = src->finalized;
    return TWDNN_STATUS_SUCCESS;
}

/* ------------------------------------------------------------------ accessors for graph.c */
const twdnn_attr *twdnn_desc_attr(const twdnn_desc *d, int name)
{
    return d ? attr_find(d, name) : NULL;
}

twdnn_desc *twdnn_desc_attr_desc(const twdnn_desc *d, int name, int64_t i)
{
    const twdnn_attr *a = twdnn_desc_attr(d, name);
    if (!a || a->type != TWDNN_TYPE_BACKEND_DESCRIPTOR || i < 0 || i >= a->count)
        return NULL;
    return twdnn_desc_get(((twdnn_desc **)a->data)[i]);
}

int twdnn_desc_attr_ints(const twdnn_desc *d, int name, int64_t *out, int max)
{
    const twdnn_attr *a = twdnn_desc_attr(d, name);
    if (!a || !is_int_type(a->type))
        return 0;
    size_t sz = type_size(a->type);
    int n = 0;
    for (; n < max && n < a->count; n++)
        out[n] = read_int((const char *)a->data + (size_t)n * sz, a->type);
    return n;
}

/* ------------------------------------------------------------------ finalization */
static twdnn_graph_sum *sum_of_graph(twdnn_desc *opgraph)
{
    twdnn_graph_sum *s = calloc(1, sizeof *s);
    if (s)
        twdnn_graph_analyze(opgraph, s);
    return s;
}

/* The heuristic's answer: one engine config (engine 0 of the graph, no knob choices), stored as the
 * descriptor's RESULTS attribute. */
static int heur_build_results(twdnn_desc *heur)
{
    twdnn_desc *graph = twdnn_desc_attr_desc(heur, TWDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, 0);
    if (!graph)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnBackendFinalize: engine heuristic without an operation graph");
    twdnn_desc *eng = desc_new(TWDNN_BACKEND_ENGINE_DESCRIPTOR);
    twdnn_desc *cfg = desc_new(TWDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    int st = TWDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
    if (eng && cfg) {
        int64_t index = 0;
        st = attr_store(eng, TWDNN_ATTR_ENGINE_OPERATION_GRAPH, TWDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
        if (st == TWDNN_STATUS_SUCCESS)
            st = attr_store(eng, TWDNN_ATTR_ENGINE_GLOBAL_INDEX, TWDNN_TYPE_INT64, 1, &index);
        eng->finalized = 1;
        if (st == TWDNN_STATUS_SUCCESS)
            st = attr_store(cfg, TWDNN_ATTR_ENGINECFG_ENGINE, TWDNN_TYPE_BACKEND_DESCRIPTOR, 1, &eng);
        if (st == TWDNN_STATUS_SUCCESS)
            st = attr_store(cfg, TWDNN_ATTR_ENGINECFG_KNOB_CHOICES, TWDNN_TYPE_BACKEND_DESCRIPTOR, 0, NULL);
        if (st == TWDNN_STATUS_SUCCESS) {
            cfg->sum = sum_of_graph(graph);
            cfg->finalized = 1;
            st = cfg->sum ? attr_store(heur, TWDNN_ATTR_ENGINEHEUR_RESULTS, TWDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg)
                          : TWDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
        }
    }
    if (eng)
        desc_release(eng);
    if (cfg)
        desc_release(cfg);
    return st;
}

static int finalize(twdnn_desc *d)
{
    switch (d->type) {
    case TWDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
        return heur_build_results(d);
    case TWDNN_BACKEND_ENGINE_DESCRIPTOR: {
        if (!twdnn_desc_attr_desc(d, TWDNN_ATTR_ENGINE_OPERATION_GRAPH, 0))
            return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnBackendFinalize: engine without an operation graph");
        int64_t index = 0;
        twdnn_desc_attr_ints(d, TWDNN_ATTR_ENGINE_GLOBAL_INDEX, &index, 1);
        if (index < 0 || index >= TWDNN_ENGINE_COUNT)
            return twdnn_fail(TWDNN_STATUS_NOT_SUPPORTED, "cudnnBackendFinalize: engine %lld does not exist",
                              (long long)index);
        return TWDNN_STATUS_SUCCESS;
    }
    case TWDNN_BACKEND_ENGINECFG_DESCRIPTOR: {
        twdnn_desc *eng = twdnn_desc_attr_desc(d, TWDNN_ATTR_ENGINECFG_ENGINE, 0);
        twdnn_desc *graph = twdnn_desc_attr_desc(eng, TWDNN_ATTR_ENGINE_OPERATION_GRAPH, 0);
        if (!graph)
            return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnBackendFinalize: engine config without an engine");
        free(d->sum);
        d->sum = sum_of_graph(graph);
        return d->sum ? TWDNN_STATUS_SUCCESS : TWDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
    }
    case TWDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: {
        twdnn_desc *cfg = twdnn_desc_attr_desc(d, TWDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, 0);
        twdnn_graph_sum s;
        if (cfg && cfg->sum) {
            s = *cfg->sum;
        } else if (cfg) {
            twdnn_desc *eng = twdnn_desc_attr_desc(cfg, TWDNN_ATTR_ENGINECFG_ENGINE, 0);
            twdnn_desc *graph = twdnn_desc_attr_desc(eng, TWDNN_ATTR_ENGINE_OPERATION_GRAPH, 0);
            if (!graph)
                return twdnn_fail(TWDNN_STATUS_BAD_PARAM_NOT_FINALIZED,
                                  "cudnnBackendFinalize: plan's engine config is not finalized");
            twdnn_graph_analyze(graph, &s);
        } else {
            /* a plan rebuilt from its JSON (cudnn_frontend's deserialize) */
            const twdnn_attr *j = twdnn_desc_attr(d, TWDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION);
            if (!j || j->type != TWDNN_TYPE_CHAR)
                return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnBackendFinalize: plan without an engine config");
            if (!twdnn_graph_sum_from_json(j->data, (size_t)j->count, &s))
                return twdnn_fail(TWDNN_STATUS_SERIALIZATION_VERSION_MISMATCH,
                                  "cudnnBackendFinalize: plan JSON was not written by timewarp");
            /* the engine config a getter hands back for such a plan */
            twdnn_desc *eng = desc_new(TWDNN_BACKEND_ENGINE_DESCRIPTOR);
            twdnn_desc *ncfg = desc_new(TWDNN_BACKEND_ENGINECFG_DESCRIPTOR);
            int st = TWDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
            if (eng && ncfg) {
                int64_t index = 0;
                st = attr_store(eng, TWDNN_ATTR_ENGINE_GLOBAL_INDEX, TWDNN_TYPE_INT64, 1, &index);
                eng->finalized = 1;
                if (st == TWDNN_STATUS_SUCCESS)
                    st = attr_store(ncfg, TWDNN_ATTR_ENGINECFG_ENGINE, TWDNN_TYPE_BACKEND_DESCRIPTOR, 1, &eng);
                if (st == TWDNN_STATUS_SUCCESS) {
                    ncfg->sum = malloc(sizeof *ncfg->sum);
                    if (ncfg->sum) {
                        *ncfg->sum = s;
                        ncfg->finalized = 1;
                        st = attr_store(d, TWDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, TWDNN_TYPE_BACKEND_DESCRIPTOR,
                                        1, &ncfg);
                    } else {
                        st = TWDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
                    }
                }
            }
            if (eng)
                desc_release(eng);
            if (ncfg)
                desc_release(ncfg);
            if (st != TWDNN_STATUS_SUCCESS)
                return st;
        }
        free(d->sum);
        d->sum = malloc(sizeof *d->sum);
        if (!d->sum)
            return TWDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
        *d->sum = s;
        return TWDNN_STATUS_SUCCESS;
    }
    case TWDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR: {
        const twdnn_attr *ops = twdnn_desc_attr(d, TWDNN_ATTR_OPERATIONGRAPH_OPS);
        if (!ops || ops->count < 1)
            return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnBackendFinalize: operation graph without operations");
        return TWDNN_STATUS_SUCCESS;
    }
    default:
        return TWDNN_STATUS_SUCCESS;
    }
}

/* ------------------------------------------------------------------ computed attributes */
/* Writes count values of an integer attribute in the caller's type. */
static int put_ints(int type, const int64_t *v, int64_t n, int64_t requested, int64_t *count, void *elems)
{
    if (n > 0 && !is_int_type(type))
        return TWDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE;
    if (count)
        *count = n;
    if (elems) {
        size_t sz = type_size(type);
        for (int64_t i = 0; i < n && i < requested; i++) {
            char *p = (char *)elems + (size_t)i * sz;
            if (sz == 8) *(int64_t *)p = v[i];
            else if (sz == 1) *(unsigned char *)p = (unsigned char)v[i];
            else *(int32_t *)p = (int32_t)v[i];
        }
    }
    return TWDNN_STATUS_SUCCESS;
}

/* Returns -1 when the attribute is not a computed one (the stored value answers). */
static int get_computed(twdnn_desc *d, int name, int type, int64_t requested, int64_t *count, void *elems)
{
    int64_t v;
    switch (d->type) {
    case TWDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
        if (name == TWDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT) {
            v = TWDNN_ENGINE_COUNT;
            return put_ints(type, &v, 1, requested, count, elems);
        }
        if (name == TWDNN_ATTR_OPERATIONGRAPH_IS_DYNAMIC_SHAPE_ENABLED && !attr_find(d, name)) {
            v = 0;
            return put_ints(type, &v, 1, requested, count, elems);
        }
        break;
    case TWDNN_BACKEND_ENGINE_DESCRIPTOR:
        if (attr_find(d, name))
            break;
        if (name == TWDNN_ATTR_ENGINE_NUMERICAL_NOTE || name == TWDNN_ATTR_ENGINE_BEHAVIOR_NOTE ||
            name == TWDNN_ATTR_ENGINE_KNOB_INFO || name == TWDNN_ATTR_ENGINE_LAYOUT_INFO) {
            /* no notes: torch's convolution filter drops configs with tensor-core or down-convert notes for
             * fp32 without TF32, and the engine here has no numerics to speak of */
            if (count)
                *count = 0;
            return TWDNN_STATUS_SUCCESS;
        }
        if (name == TWDNN_ATTR_ENGINE_SM_COUNT_TARGET) {
            const tw_gpu_spec *spec = tw_device_spec(tw_get_device());
            v = spec ? spec->sm_count : 0;
            return put_ints(type, &v, 1, requested, count, elems);
        }
        break;
    case TWDNN_BACKEND_ENGINECFG_DESCRIPTOR:
        if (name == TWDNN_ATTR_ENGINECFG_WORKSPACE_SIZE || name == TWDNN_ATTR_ENGINECFG_SHARED_MEMORY_USED) {
            if (!d->sum)
                return twdnn_fail(TWDNN_STATUS_BAD_PARAM_NOT_FINALIZED, "engine config is not finalized");
            v = name == TWDNN_ATTR_ENGINECFG_WORKSPACE_SIZE ? d->sum->workspace : d->sum->shared_mem;
            return put_ints(type, &v, 1, requested, count, elems);
        }
        if (name == TWDNN_ATTR_ENGINECFG_INTERMEDIATE_INFO && !attr_find(d, name)) {
            if (count)
                *count = 0;
            return TWDNN_STATUS_SUCCESS;
        }
        break;
    case TWDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
        if (name == TWDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE) {
            if (!d->sum)
                return twdnn_fail(TWDNN_STATUS_BAD_PARAM_NOT_FINALIZED, "execution plan is not finalized");
            v = d->sum->workspace;
            return put_ints(type, &v, 1, requested, count, elems);
        }
        if (name == TWDNN_ATTR_EXECUTION_PLAN_COMPUTED_INTERMEDIATE_UIDS && !attr_find(d, name)) {
            if (count)
                *count = 0;
            return TWDNN_STATUS_SUCCESS;
        }
        if (name == TWDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION && d->sum) {
            if (type != TWDNN_TYPE_CHAR)
                return TWDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE;
            char buf[1024];
            int n = twdnn_graph_sum_to_json(d->sum, buf, sizeof buf);
            if (n < 0)
                return TWDNN_STATUS_INTERNAL_ERROR;
            n++; /* with its terminating NUL, as cuDNN counts it */
            if (count)
                *count = n;
            if (elems && requested > 0)
                memcpy(elems, buf, (size_t)(requested < n ? requested : n));
            return TWDNN_STATUS_SUCCESS;
        }
        break;
    default:
        break;
    }
    return -1;
}

/* ------------------------------------------------------------------ the API */
TW_EXPORT int cudnnBackendCreateDescriptor(int type, void **descriptor)
{
    if (!descriptor)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnBackendCreateDescriptor: descriptor is NULL");
    if (type < 0 || type >= TWDNN_BACKEND_DESCRIPTOR_TYPE_LIMIT)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE, "cudnnBackendCreateDescriptor: type %d", type);
    twdnn_desc *d = desc_new(type);
    if (!d)
        return twdnn_fail(TWDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED, "cudnnBackendCreateDescriptor: no memory");
    *descriptor = d;
    return TWDNN_STATUS_SUCCESS;
}

TW_EXPORT int cudnnBackendDestroyDescriptor(void *descriptor)
{
    pthread_mutex_lock(&store_lock);
    twdnn_desc *d = twdnn_desc_get(descriptor);
    int st = TWDNN_STATUS_SUCCESS;
    if (!d || d->user_released)
        st = twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnBackendDestroyDescriptor: %p is not a live descriptor",
                        descriptor);
    else
        desc_release(d);
    pthread_mutex_unlock(&store_lock);
    return st;
}

TW_EXPORT int cudnnBackendFinalize(void *descriptor)
{
    pthread_mutex_lock(&store_lock);
    twdnn_desc *d = twdnn_desc_get(descriptor);
    int st;
    if (!d) {
        st = twdnn_fail(TWDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnBackendFinalize: %p is not a descriptor",
                        descriptor);
    } else if (d->finalized) {
        st = TWDNN_STATUS_SUCCESS;
    } else {
        st = finalize(d);
        if (st == TWDNN_STATUS_SUCCESS)
            d->finalized = 1;
    }
    pthread_mutex_unlock(&store_lock);
    return st;
}

TW_EXPORT int cudnnBackendSetAttribute(void *descriptor, int name, int type, int64_t count, const void *elems)
{
    pthread_mutex_lock(&store_lock);
    twdnn_desc *d = twdnn_desc_get(descriptor);
    int st = TWDNN_STATUS_SUCCESS;
    if (!d)
        st = twdnn_fail(TWDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnBackendSetAttribute: %p is not a descriptor",
                        descriptor);
    else if (d->finalized)
        st = twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnBackendSetAttribute: descriptor is already finalized");
    else if (type < 0 || type >= TWDNN_TYPE_LIMIT)
        st = twdnn_fail(TWDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, "cudnnBackendSetAttribute: attribute type %d", type);
    else if (count < 0 || (count > 0 && !elems))
        st = twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnBackendSetAttribute: %lld elements at %p", (long long)count,
                        elems);
    if (st == TWDNN_STATUS_SUCCESS && type == TWDNN_TYPE_BACKEND_DESCRIPTOR) {
        void *const *v = elems;
        for (int64_t i = 0; i < count; i++)
            if (v[i] && !twdnn_desc_get(v[i])) {
                st = twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnBackendSetAttribute: attribute %d element %lld is not a "
                                "descriptor", name, (long long)i);
                break;
            }
    }
    if (st == TWDNN_STATUS_SUCCESS)
        st = attr_store(d, name, type, count, elems);
    pthread_mutex_unlock(&store_lock);
    return st;
}

TW_EXPORT int cudnnBackendGetAttribute(void *const descriptor, int name, int type, int64_t requested,
                                       int64_t *count, void *elems)
{
    pthread_mutex_lock(&store_lock);
    twdnn_desc *d = twdnn_desc_get(descriptor);
    int st = TWDNN_STATUS_SUCCESS;
    if (!d) {
        st = twdnn_fail(TWDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnBackendGetAttribute: %p is not a descriptor",
                        descriptor);
        goto out;
    }
    if (requested < 0) {
        st = twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnBackendGetAttribute: requested %lld", (long long)requested);
        goto out;
    }
    st = get_computed(d, name, type, requested, count, elems);
    if (st >= 0)
        goto out;
    st = TWDNN_STATUS_SUCCESS;

    twdnn_attr *a = attr_find(d, name);
    if (!a) {
        /* never set: cuDNN reports an empty value for optional attributes */
        if (count)
            *count = 0;
        goto out;
    }
    int64_t n = a->count < requested ? a->count : requested;
    if (count)
        *count = a->count;
    if (!elems || n == 0)
        goto out;
    if (a->type == type) {
        if (type == TWDNN_TYPE_BACKEND_DESCRIPTOR) {
            twdnn_desc **src = a->data;
            void **dst = elems;
            for (int64_t i = 0; i < n && st == TWDNN_STATUS_SUCCESS; i++) {
                twdnn_desc *to = twdnn_desc_get(dst[i]);
                if (!src[i])
                    continue;
                if (!to)
                    st = twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnBackendGetAttribute: attribute %d: element %lld "
                                    "of the caller's array is not a descriptor", name, (long long)i);
                else
                    st = desc_copy_into(to, src[i]);
            }
        } else {
            memcpy(elems, a->data, (size_t)n * type_size(type));
        }
    } else if (is_int_type(a->type) && is_int_type(type) &&
               (type == TWDNN_TYPE_INT32 || type == TWDNN_TYPE_INT64 || a->type == TWDNN_TYPE_INT32 ||
                a->type == TWDNN_TYPE_INT64)) {
        /* an integer set as int64 and read as int32 (or the reverse) */
        size_t ssz = type_size(a->type);
        int64_t tmp[64];
        int64_t m = n < 64 ? n : 64;
        for (int64_t i = 0; i < m; i++)
            tmp[i] = read_int((const char *)a->data + (size_t)i * ssz, a->type);
        put_ints(type, tmp, m, m, NULL, elems);
    } else if ((a->type == TWDNN_TYPE_FLOAT || a->type == TWDNN_TYPE_DOUBLE) &&
               (type == TWDNN_TYPE_FLOAT || type == TWDNN_TYPE_DOUBLE)) {
        for (int64_t i = 0; i < n; i++) {
            double x = a->type == TWDNN_TYPE_FLOAT ? ((const float *)a->data)[i] : ((const double *)a->data)[i];
            if (type == TWDNN_TYPE_FLOAT)
                ((float *)elems)[i] = (float)x;
            else
                ((double *)elems)[i] = x;
        }
    } else {
        st = twdnn_fail(TWDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE,
                        "cudnnBackendGetAttribute: attribute %d was set with type %d, asked for as type %d", name,
                        a->type, type);
    }
out:
    pthread_mutex_unlock(&store_lock);
    return st;
}

TW_EXPORT int cudnnBackendExecute(void *handle, void *plan, void *variant_pack)
{
    twdnn_handle *h = twdnn_handle_get(handle);
    if (!h)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnBackendExecute: not a cuDNN handle");
    pthread_mutex_lock(&store_lock);
    twdnn_desc *p = twdnn_desc_get(plan);
    twdnn_desc *vp = twdnn_desc_get(variant_pack);
    twdnn_graph_sum s;
    int st = TWDNN_STATUS_SUCCESS;
    if (!p || p->type != TWDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR || !p->finalized || !p->sum)
        st = twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnBackendExecute: %p is not a finalized execution plan", plan);
    else if (!vp || vp->type != TWDNN_BACKEND_VARIANT_PACK_DESCRIPTOR || !vp->finalized)
        st = twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnBackendExecute: %p is not a finalized variant pack",
                        variant_pack);
    else
        s = *p->sum;
    pthread_mutex_unlock(&store_lock);
    if (st != TWDNN_STATUS_SUCCESS)
        return st;

    tw_stream *stream = twdnn_handle_stream(h);
    if (!stream)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM_STREAM_MISMATCH, "cudnnBackendExecute: the handle's stream is gone");
    tw_err e = twdnn_graph_launch(&s, stream);
    if (e != TW_OK)
        return twdnn_fail(TWDNN_STATUS_EXECUTION_FAILED_CUDART, "cudnnBackendExecute: launch failed (%d)", (int)e);
    return TWDNN_STATUS_SUCCESS;
}
