/* The legacy (v7-style) descriptors: tensors, filters, convolutions, activations. They only store what the
 * program set and hand it back; the convolution calls (convolution.c) read them to size and time the work. */
#include <stdlib.h>
#include <string.h>

#include "cudnn_internal.h"
#include "legacy_desc.h"

#define CHECK_OUT(p, fn) \
    do { if (!(p)) return twdnn_fail(TWDNN_STATUS_BAD_PARAM_NULL_POINTER, fn ": NULL output pointer"); } while (0)

static void *new_obj(size_t size, uint32_t magic)
{
    uint32_t *p = calloc(1, size);
    if (p)
        *p = magic;
    return p;
}

static int del_obj(void *p, uint32_t magic, const char *fn)
{
    if (!p)
        return TWDNN_STATUS_SUCCESS;   /* cuDNN accepts destroying NULL */
    if (*(uint32_t *)p != magic)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "%s: not a descriptor of this kind", fn);
    *(uint32_t *)p = 0;
    free(p);
    return TWDNN_STATUS_SUCCESS;
}

twdnn_tensor *twdnn_tensor_get(const void *p)
{
    twdnn_tensor *t = (twdnn_tensor *)p;
    return (t && t->magic == TWDNN_TENSOR_MAGIC) ? t : NULL;
}
twdnn_filter *twdnn_filter_get(const void *p)
{
    twdnn_filter *f = (twdnn_filter *)p;
    return (f && f->magic == TWDNN_FILTER_MAGIC) ? f : NULL;
}
twdnn_conv *twdnn_conv_get(const void *p)
{
    twdnn_conv *c = (twdnn_conv *)p;
    return (c && c->magic == TWDNN_CONV_MAGIC) ? c : NULL;
}

double twdnn_tensor_numel(const twdnn_tensor *t)
{
    double n = 1;
    for (int i = 0; i < t->nb; i++)
        n *= (double)t->dims[i];
    return t->nb ? n : 0;
}

double twdnn_filter_numel(const twdnn_filter *f)
{
    double n = 1;
    for (int i = 0; i < f->nb; i++)
        n *= (double)f->dims[i];
    return f->nb ? n : 0;
}

/* ------------------------------------------------------------------ tensors */
TW_EXPORT int cudnnCreateTensorDescriptor(void **desc)
{
    CHECK_OUT(desc, "cudnnCreateTensorDescriptor");
    *desc = new_obj(sizeof(twdnn_tensor), TWDNN_TENSOR_MAGIC);
    return *desc ? TWDNN_STATUS_SUCCESS : TWDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
}

TW_EXPORT int cudnnDestroyTensorDescriptor(void *desc)
{
    return del_obj(desc, TWDNN_TENSOR_MAGIC, "cudnnDestroyTensorDescriptor");
}

TW_EXPORT int cudnnSetTensorNdDescriptor(void *desc, int dtype, int nb, const int dims[], const int strides[])
{
    twdnn_tensor *t = twdnn_tensor_get(desc);
    if (!t)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnSetTensorNdDescriptor: not a tensor descriptor");
    if (nb < 1 || nb > TWDNN_DIM_MAX || !dims || !strides)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnSetTensorNdDescriptor: nbDims %d", nb);
    for (int i = 0; i < nb; i++)
        if (dims[i] <= 0 || strides[i] <= 0)
            return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnSetTensorNdDescriptor: dim %d is %d, stride %d", i,
                              dims[i], strides[i]);
    t->dtype = dtype;
    t->nb = nb;
    memcpy(t->dims, dims, (size_t)nb * sizeof(int));
    memcpy(t->strides, strides, (size_t)nb * sizeof(int));
    return TWDNN_STATUS_SUCCESS;
}

/* Packed strides for dims in NCHW (or NHWC: channels innermost) order. */
static void packed_strides(int format, int nb, const int dims[], int strides[])
{
    if (format == TWDNN_TENSOR_NHWC && nb >= 3) {
        int s = 1;
        strides[1] = s;
        s *= dims[1];
        for (int i = nb - 1; i >= 2; i--) {
            strides[i] = s;
            s *= dims[i];
        }
        strides[0] = s;
    } else {
        int s = 1;
        for (int i = nb - 1; i >= 0; i--) {
            strides[i] = s;
            s *= dims[i];
        }
    }
}

TW_EXPORT int cudnnSetTensorNdDescriptorEx(void *desc, int format, int dtype, int nb, const int dims[])
{
    if (nb < 1 || nb > TWDNN_DIM_MAX || !dims)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnSetTensorNdDescriptorEx: nbDims %d", nb);
    int strides[TWDNN_DIM_MAX];
    packed_strides(format, nb, dims, strides);
    return cudnnSetTensorNdDescriptor(desc, dtype, nb, dims, strides);
}

TW_EXPORT int cudnnSetTensor4dDescriptorEx(void *desc, int dtype, int n, int c, int h, int w, int ns, int cs, int hs,
                                           int ws)
{
    int dims[4] = {n, c, h, w}, strides[4] = {ns, cs, hs, ws};
    return cudnnSetTensorNdDescriptor(desc, dtype, 4, dims, strides);
}

TW_EXPORT int cudnnSetTensor4dDescriptor(void *desc, int format, int dtype, int n, int c, int h, int w)
{
    int dims[4] = {n, c, h, w};
    return cudnnSetTensorNdDescriptorEx(desc, format, dtype, 4, dims);
}

TW_EXPORT int cudnnGetTensorNdDescriptor(const void *desc, int requested, int *dtype, int *nb, int dims[],
                                         int strides[])
{
    twdnn_tensor *t = twdnn_tensor_get(desc);
    if (!t)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnGetTensorNdDescriptor: not a tensor descriptor");
    if (dtype)
        *dtype = t->dtype;
    if (nb)
        *nb = t->nb;
    for (int i = 0; i < requested && i < t->nb; i++) {
        if (dims)
            dims[i] = t->dims[i];
        if (strides)
            strides[i] = t->strides[i];
    }
    return TWDNN_STATUS_SUCCESS;
}

TW_EXPORT int cudnnGetTensor4dDescriptor(const void *desc, int *dtype, int *n, int *c, int *h, int *w, int *ns,
                                         int *cs, int *hs, int *ws)
{
    twdnn_tensor *t = twdnn_tensor_get(desc);
    if (!t || t->nb != 4)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnGetTensor4dDescriptor: not a 4-d tensor descriptor");
    int *out[] = {n, c, h, w}, *sout[] = {ns, cs, hs, ws};
    if (dtype)
        *dtype = t->dtype;
    for (int i = 0; i < 4; i++) {
        if (out[i])
            *out[i] = t->dims[i];
        if (sout[i])
            *sout[i] = t->strides[i];
    }
    return TWDNN_STATUS_SUCCESS;
}

TW_EXPORT int cudnnGetTensorSizeInBytes(const void *desc, size_t *size)
{
    twdnn_tensor *t = twdnn_tensor_get(desc);
    if (!t)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnGetTensorSizeInBytes: not a tensor descriptor");
    CHECK_OUT(size, "cudnnGetTensorSizeInBytes");
    /* the span the strides reach, not the element count */
    size_t last = 0;
    for (int i = 0; i < t->nb; i++)
        last += (size_t)(t->dims[i] - 1) * (size_t)t->strides[i];
    *size = t->nb ? (last + 1) * twdnn_dtype_size(t->dtype) : 0;
    return TWDNN_STATUS_SUCCESS;
}

/* ------------------------------------------------------------------ filters */
TW_EXPORT int cudnnCreateFilterDescriptor(void **desc)
{
    CHECK_OUT(desc, "cudnnCreateFilterDescriptor");
    *desc = new_obj(sizeof(twdnn_filter), TWDNN_FILTER_MAGIC);
    return *desc ? TWDNN_STATUS_SUCCESS : TWDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
}

TW_EXPORT int cudnnDestroyFilterDescriptor(void *desc)
{
    return del_obj(desc, TWDNN_FILTER_MAGIC, "cudnnDestroyFilterDescriptor");
}

TW_EXPORT int cudnnSetFilterNdDescriptor(void *desc, int dtype, int format, int nb, const int dims[])
{
    twdnn_filter *f = twdnn_filter_get(desc);
    if (!f)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnSetFilterNdDescriptor: not a filter descriptor");
    if (nb < 1 || nb > TWDNN_DIM_MAX || !dims)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnSetFilterNdDescriptor: nbDims %d", nb);
    for (int i = 0; i < nb; i++)
        if (dims[i] <= 0)
            return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnSetFilterNdDescriptor: dim %d is %d", i, dims[i]);
    f->dtype = dtype;
    f->format = format;
    f->nb = nb;
    memcpy(f->dims, dims, (size_t)nb * sizeof(int));
    return TWDNN_STATUS_SUCCESS;
}

TW_EXPORT int cudnnSetFilter4dDescriptor(void *desc, int dtype, int format, int k, int c, int h, int w)
{
    int dims[4] = {k, c, h, w};
    return cudnnSetFilterNdDescriptor(desc, dtype, format, 4, dims);
}

TW_EXPORT int cudnnGetFilterNdDescriptor(const void *desc, int requested, int *dtype, int *format, int *nb,
                                         int dims[])
{
    twdnn_filter *f = twdnn_filter_get(desc);
    if (!f)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnGetFilterNdDescriptor: not a filter descriptor");
    if (dtype)
        *dtype = f->dtype;
    if (format)
        *format = f->format;
    if (nb)
        *nb = f->nb;
    for (int i = 0; i < requested && i < f->nb && dims; i++)
        dims[i] = f->dims[i];
    return TWDNN_STATUS_SUCCESS;
}

TW_EXPORT int cudnnGetFilter4dDescriptor(const void *desc, int *dtype, int *format, int *k, int *c, int *h, int *w)
{
    twdnn_filter *f = twdnn_filter_get(desc);
    if (!f || f->nb != 4)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnGetFilter4dDescriptor: not a 4-d filter descriptor");
    int *out[] = {k, c, h, w};
    if (dtype)
        *dtype = f->dtype;
    if (format)
        *format = f->format;
    for (int i = 0; i < 4; i++)
        if (out[i])
            *out[i] = f->dims[i];
    return TWDNN_STATUS_SUCCESS;
}

TW_EXPORT int cudnnGetFilterSizeInBytes(const void *desc, size_t *size)
{
    twdnn_filter *f = twdnn_filter_get(desc);
    if (!f)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnGetFilterSizeInBytes: not a filter descriptor");
    CHECK_OUT(size, "cudnnGetFilterSizeInBytes");
    *size = (size_t)twdnn_filter_numel(f) * twdnn_dtype_size(f->dtype);
    return TWDNN_STATUS_SUCCESS;
}

/* ------------------------------------------------------------------ convolutions */
TW_EXPORT int cudnnCreateConvolutionDescriptor(void **desc)
{
    CHECK_OUT(desc, "cudnnCreateConvolutionDescriptor");
    twdnn_conv *c = new_obj(sizeof(twdnn_conv), TWDNN_CONV_MAGIC);
    if (!c)
        return TWDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
    c->groups = 1;
    c->math = TWDNN_DEFAULT_MATH;
    c->mode = TWDNN_CROSS_CORRELATION;
    c->compute = TWDNN_DATA_FLOAT;
    *desc = c;
    return TWDNN_STATUS_SUCCESS;
}

TW_EXPORT int cudnnDestroyConvolutionDescriptor(void *desc)
{
    return del_obj(desc, TWDNN_CONV_MAGIC, "cudnnDestroyConvolutionDescriptor");
}

TW_EXPORT int cudnnSetConvolutionNdDescriptor(void *desc, int n, const int pad[], const int stride[],
                                              const int dilation[], int mode, int compute)
{
    twdnn_conv *c = twdnn_conv_get(desc);
    if (!c)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnSetConvolutionNdDescriptor: not a convolution descriptor");
    if (n < 1 || n > TWDNN_DIM_MAX - 2 || !pad || !stride || !dilation)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnSetConvolutionNdDescriptor: arrayLength %d", n);
    for (int i = 0; i < n; i++)
        if (stride[i] <= 0 || dilation[i] <= 0 || pad[i] < 0)
            return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnSetConvolutionNdDescriptor: pad %d stride %d dilation %d",
                              pad[i], stride[i], dilation[i]);
    c->n = n;
    memcpy(c->pad, pad, (size_t)n * sizeof(int));
    memcpy(c->stride, stride, (size_t)n * sizeof(int));
    memcpy(c->dilation, dilation, (size_t)n * sizeof(int));
    c->mode = mode;
    c->compute = compute;
    return TWDNN_STATUS_SUCCESS;
}

TW_EXPORT int cudnnSetConvolution2dDescriptor(void *desc, int pad_h, int pad_w, int u, int v, int dil_h, int dil_w,
                                              int mode, int compute)
{
    int pad[2] = {pad_h, pad_w}, stride[2] = {u, v}, dil[2] = {dil_h, dil_w};
    return cudnnSetConvolutionNdDescriptor(desc, 2, pad, stride, dil, mode, compute);
}

TW_EXPORT int cudnnGetConvolutionNdDescriptor(const void *desc, int requested, int *n, int pad[], int stride[],
                                              int dilation[], int *mode, int *compute)
{
    twdnn_conv *c = twdnn_conv_get(desc);
    if (!c)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnGetConvolutionNdDescriptor: not a convolution descriptor");
    if (n)
        *n = c->n;
    for (int i = 0; i < requested && i < c->n; i++) {
        if (pad)
            pad[i] = c->pad[i];
        if (stride)
            stride[i] = c->stride[i];
        if (dilation)
            dilation[i] = c->dilation[i];
    }
    if (mode)
        *mode = c->mode;
    if (compute)
        *compute = c->compute;
    return TWDNN_STATUS_SUCCESS;
}

TW_EXPORT int cudnnGetConvolution2dDescriptor(const void *desc, int *pad_h, int *pad_w, int *u, int *v, int *dil_h,
                                              int *dil_w, int *mode, int *compute)
{
    twdnn_conv *c = twdnn_conv_get(desc);
    if (!c || c->n != 2)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnGetConvolution2dDescriptor: not a 2-d convolution");
    if (pad_h) *pad_h = c->pad[0];
    if (pad_w) *pad_w = c->pad[1];
    if (u) *u = c->stride[0];
    if (v) *v = c->stride[1];
    if (dil_h) *dil_h = c->dilation[0];
    if (dil_w) *dil_w = c->dilation[1];
    if (mode) *mode = c->mode;
    if (compute) *compute = c->compute;
    return TWDNN_STATUS_SUCCESS;
}

#define CONV_FIELD(setter, getter, field)                                                              \
    TW_EXPORT int setter(void *desc, int value)                                                        \
    {                                                                                                  \
        twdnn_conv *c = twdnn_conv_get(desc);                                                          \
        if (!c)                                                                                        \
            return twdnn_fail(TWDNN_STATUS_BAD_PARAM, #setter ": not a convolution descriptor");       \
        c->field = value;                                                                              \
        return TWDNN_STATUS_SUCCESS;                                                                   \
    }                                                                                                  \
    TW_EXPORT int getter(void *desc, int *value)                                                       \
    {                                                                                                  \
        twdnn_conv *c = twdnn_conv_get(desc);                                                          \
        if (!c)                                                                                        \
            return twdnn_fail(TWDNN_STATUS_BAD_PARAM, #getter ": not a convolution descriptor");       \
        CHECK_OUT(value, #getter);                                                                     \
        *value = c->field;                                                                             \
        return TWDNN_STATUS_SUCCESS;                                                                   \
    }
CONV_FIELD(cudnnSetConvolutionMathType, cudnnGetConvolutionMathType, math)
CONV_FIELD(cudnnSetConvolutionReorderType, cudnnGetConvolutionReorderType, reorder)

TW_EXPORT int cudnnSetConvolutionGroupCount(void *desc, int groups)
{
    twdnn_conv *c = twdnn_conv_get(desc);
    if (!c)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnSetConvolutionGroupCount: not a convolution descriptor");
    if (groups < 1)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnSetConvolutionGroupCount: %d groups", groups);
    c->groups = groups;
    return TWDNN_STATUS_SUCCESS;
}

TW_EXPORT int cudnnGetConvolutionGroupCount(void *desc, int *groups)
{
    twdnn_conv *c = twdnn_conv_get(desc);
    if (!c)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnGetConvolutionGroupCount: not a convolution descriptor");
    CHECK_OUT(groups, "cudnnGetConvolutionGroupCount");
    *groups = c->groups;
    return TWDNN_STATUS_SUCCESS;
}

TW_EXPORT int cudnnGetConvolutionNdForwardOutputDim(const void *conv, const void *input, const void *filter, int nb,
                                                    int out[])
{
    twdnn_conv *c = twdnn_conv_get(conv);
    twdnn_tensor *x = twdnn_tensor_get(input);
    twdnn_filter *w = twdnn_filter_get(filter);
    if (!c || !x || !w || !out)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnGetConvolutionNdForwardOutputDim: bad descriptor");
    if (nb != x->nb || x->nb != w->nb || c->n != nb - 2)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnGetConvolutionNdForwardOutputDim: %d dims, tensor %d, filter %d, "
                          "convolution %d", nb, x->nb, w->nb, c->n);
    out[0] = x->dims[0];
    out[1] = w->dims[0];
    for (int i = 2; i < nb; i++) {
        int k = (w->dims[i] - 1) * c->dilation[i - 2] + 1;
        int span = x->dims[i] + 2 * c->pad[i - 2] - k;
        if (span < 0)
            return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnGetConvolutionNdForwardOutputDim: filter larger than input");
        out[i] = 1 + span / c->stride[i - 2];
    }
    return TWDNN_STATUS_SUCCESS;
}

TW_EXPORT int cudnnGetConvolution2dForwardOutputDim(const void *conv, const void *input, const void *filter, int *n,
                                                    int *c, int *h, int *w)
{
    int out[4];
    int st = cudnnGetConvolutionNdForwardOutputDim(conv, input, filter, 4, out);
    if (st != TWDNN_STATUS_SUCCESS)
        return st;
    if (n) *n = out[0];
    if (c) *c = out[1];
    if (h) *h = out[2];
    if (w) *w = out[3];
    return TWDNN_STATUS_SUCCESS;
}

/* ------------------------------------------------------------------ activations (for the fused convolution) */
TW_EXPORT int cudnnCreateActivationDescriptor(void **desc)
{
    CHECK_OUT(desc, "cudnnCreateActivationDescriptor");
    *desc = new_obj(sizeof(twdnn_activation), TWDNN_ACTIVATION_MAGIC);
    return *desc ? TWDNN_STATUS_SUCCESS : TWDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
}

TW_EXPORT int cudnnDestroyActivationDescriptor(void *desc)
{
    return del_obj(desc, TWDNN_ACTIVATION_MAGIC, "cudnnDestroyActivationDescriptor");
}

TW_EXPORT int cudnnSetActivationDescriptor(void *desc, int mode, int nan_prop, double coef)
{
    twdnn_activation *a = desc;
    if (!a || a->magic != TWDNN_ACTIVATION_MAGIC)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnSetActivationDescriptor: not an activation descriptor");
    a->mode = mode;
    a->nan_prop = nan_prop;
    a->coef = coef;
    return TWDNN_STATUS_SUCCESS;
}

TW_EXPORT int cudnnGetActivationDescriptor(const void *desc, int *mode, int *nan_prop, double *coef)
{
    const twdnn_activation *a = desc;
    if (!a || a->magic != TWDNN_ACTIVATION_MAGIC)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnGetActivationDescriptor: not an activation descriptor");
    if (mode) *mode = a->mode;
    if (nan_prop) *nan_prop = a->nan_prop;
    if (coef) *coef = a->coef;
    return TWDNN_STATUS_SUCCESS;
}
