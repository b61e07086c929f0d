/* Convolutions through the legacy API (torch uses it when TORCH_CUDNN_V8_API_DISABLED=1, and for the fused
 * bias+activation path): algorithm queries answer one algorithm that needs no workspace, and each convolution
 * is one kernel on the handle's stream timed by a roofline over its FLOPs and bytes. Nothing is computed. */
#include <string.h>

#include "cudnn_internal.h"
#include "legacy_desc.h"

typedef enum { PASS_FWD, PASS_BWD_DATA, PASS_BWD_FILTER } conv_pass;

static const char *const pass_kernel[] = {"timewarp_cudnn_conv_fprop", "timewarp_cudnn_conv_dgrad",
                                          "timewarp_cudnn_conv_wgrad"};

/* FLOPs of one pass: 2 * output-side elements (y for every pass) * C/groups * filter spatial size. */
static double conv_flops(const twdnn_tensor *y, const twdnn_filter *w)
{
    double red = 1;
    for (int i = 1; i < w->nb; i++)
        red *= (double)w->dims[i];
    return 2.0 * twdnn_tensor_numel(y) * red;
}

static double conv_bytes(const twdnn_tensor *x, const twdnn_filter *w, const twdnn_tensor *y)
{
    return twdnn_tensor_numel(x) * (double)twdnn_dtype_size(x->dtype) +
           twdnn_filter_numel(w) * (double)twdnn_dtype_size(w->dtype) +
           twdnn_tensor_numel(y) * (double)twdnn_dtype_size(y->dtype);
}

static int check_conv(const char *fn, const void *x, const void *w, const void *conv, const void *y,
                      twdnn_tensor **xo, twdnn_filter **wo, twdnn_conv **co, twdnn_tensor **yo)
{
    *xo = twdnn_tensor_get(x);
    *wo = twdnn_filter_get(w);
    *co = twdnn_conv_get(conv);
    *yo = twdnn_tensor_get(y);
    if (!*xo || !*wo || !*co || !*yo)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "%s: a tensor, filter or convolution descriptor is not valid", fn);
    return TWDNN_STATUS_SUCCESS;
}

/* One "heuristic" answer: the implicit-GEMM algorithm, deterministic, no workspace, its predicted time. */
static int algo_answer(const char *fn, void *handle, const void *x, const void *w, const void *conv, const void *y,
                       int algo, int requested, int *returned, void *perf)
{
    twdnn_tensor *xt, *yt;
    twdnn_filter *wt;
    twdnn_conv *ct;
    if (!twdnn_handle_get(handle))
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "%s: not a cuDNN handle", fn);
    int st = check_conv(fn, x, w, conv, y, &xt, &wt, &ct, &yt);
    if (st != TWDNN_STATUS_SUCCESS)
        return st;
    if (requested < 1 || !returned || !perf)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "%s: requestedAlgoCount %d", fn, requested);
    twdnn_algo_perf *p = perf;
    memset(p, 0, sizeof *p);
    p->algo = algo;
    p->status = TWDNN_STATUS_SUCCESS;
    uint64_t ns = twdnn_roofline_ns(tw_get_device(), conv_flops(yt, wt), conv_bytes(xt, wt, yt), xt->dtype);
    p->time = (float)((double)ns / 1e6);
    p->memory = 0;
    p->determinism = TWDNN_DETERMINISTIC;
    p->mathType = ct->math;
    *returned = 1;
    return TWDNN_STATUS_SUCCESS;
}

static int max_count(const char *fn, void *handle, int *count, int n)
{
    if (!twdnn_handle_get(handle))
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "%s: not a cuDNN handle", fn);
    if (!count)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM_NULL_POINTER, "%s: count is NULL", fn);
    *count = n;
    return TWDNN_STATUS_SUCCESS;
}

TW_EXPORT int cudnnGetConvolutionForwardAlgorithmMaxCount(void *handle, int *count)
{
    return max_count("cudnnGetConvolutionForwardAlgorithmMaxCount", handle, count, TWDNN_CONV_FWD_ALGO_COUNT);
}
TW_EXPORT int cudnnGetConvolutionBackwardDataAlgorithmMaxCount(void *handle, int *count)
{
    return max_count("cudnnGetConvolutionBackwardDataAlgorithmMaxCount", handle, count, TWDNN_CONV_BWD_DATA_ALGO_COUNT);
}
TW_EXPORT int cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(void *handle, int *count)
{
    return max_count("cudnnGetConvolutionBackwardFilterAlgorithmMaxCount", handle, count,
                     TWDNN_CONV_BWD_FILTER_ALGO_COUNT);
}

/* Forward: (x, w, conv, y). Backward data: (w, dy, conv, dx). Backward filter: (x, dy, conv, dw). The
 * helpers take (input x-side, filter, conv, output y-side) so that the output for FLOPs is always the
 * activation with K channels (y or dy). */
TW_EXPORT int cudnnGetConvolutionForwardAlgorithm_v7(void *handle, const void *x, const void *w, const void *conv,
                                                     const void *y, int requested, int *returned, void *perf)
{
    return algo_answer("cudnnGetConvolutionForwardAlgorithm_v7", handle, x, w, conv, y,
                       TWDNN_CONV_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, requested, returned, perf);
}
TW_EXPORT int cudnnFindConvolutionForwardAlgorithm(void *handle, const void *x, const void *w, const void *conv,
                                                   const void *y, int requested, int *returned, void *perf)
{
    return algo_answer("cudnnFindConvolutionForwardAlgorithm", handle, x, w, conv, y,
                       TWDNN_CONV_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, requested, returned, perf);
}
TW_EXPORT int cudnnFindConvolutionForwardAlgorithmEx(void *handle, const void *x, const void *xp, const void *w,
                                                     const void *wp, const void *conv, const void *y, void *yp,
                                                     int requested, int *returned, void *perf, void *ws,
                                                     size_t ws_size)
{
    (void)xp; (void)wp; (void)yp; (void)ws; (void)ws_size;
    return algo_answer("cudnnFindConvolutionForwardAlgorithmEx", handle, x, w, conv, y,
                       TWDNN_CONV_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, requested, returned, perf);
}

TW_EXPORT int cudnnGetConvolutionBackwardDataAlgorithm_v7(void *handle, const void *w, const void *dy,
                                                          const void *conv, const void *dx, int requested,
                                                          int *returned, void *perf)
{
    return algo_answer("cudnnGetConvolutionBackwardDataAlgorithm_v7", handle, dx, w, conv, dy,
                       TWDNN_CONV_BWD_DATA_ALGO_1, requested, returned, perf);
}
TW_EXPORT int cudnnFindConvolutionBackwardDataAlgorithm(void *handle, const void *w, const void *dy,
                                                        const void *conv, const void *dx, int requested,
                                                        int *returned, void *perf)
{
    return algo_answer("cudnnFindConvolutionBackwardDataAlgorithm", handle, dx, w, conv, dy,
                       TWDNN_CONV_BWD_DATA_ALGO_1, requested, returned, perf);
}
TW_EXPORT int cudnnFindConvolutionBackwardDataAlgorithmEx(void *handle, const void *w, const void *wp,
                                                          const void *dy, const void *dyp, const void *conv,
                                                          const void *dx, void *dxp, int requested, int *returned,
                                                          void *perf, void *ws, size_t ws_size)
{
    (void)wp; (void)dyp; (void)dxp; (void)ws; (void)ws_size;
    return algo_answer("cudnnFindConvolutionBackwardDataAlgorithmEx", handle, dx, w, conv, dy,
                       TWDNN_CONV_BWD_DATA_ALGO_1, requested, returned, perf);
}

TW_EXPORT int cudnnGetConvolutionBackwardFilterAlgorithm_v7(void *handle, const void *x, const void *dy,
                                                            const void *conv, const void *dw, int requested,
                                                            int *returned, void *perf)
{
    return algo_answer("cudnnGetConvolutionBackwardFilterAlgorithm_v7", handle, x, dw, conv, dy,
                       TWDNN_CONV_BWD_FILTER_ALGO_1, requested, returned, perf);
}
TW_EXPORT int cudnnFindConvolutionBackwardFilterAlgorithm(void *handle, const void *x, const void *dy,
                                                          const void *conv, const void *dw, int requested,
                                                          int *returned, void *perf)
{
    return algo_answer("cudnnFindConvolutionBackwardFilterAlgorithm", handle, x, dw, conv, dy,
                       TWDNN_CONV_BWD_FILTER_ALGO_1, requested, returned, perf);
}
TW_EXPORT int cudnnFindConvolutionBackwardFilterAlgorithmEx(void *handle, const void *x, const void *xp,
                                                            const void *dy, const void *dyp, const void *conv,
                                                            const void *dw, void *dwp, int requested,
                                                            int *returned, void *perf, void *ws, size_t ws_size)
{
    (void)xp; (void)dyp; (void)dwp; (void)ws; (void)ws_size;
    return algo_answer("cudnnFindConvolutionBackwardFilterAlgorithmEx", handle, x, dw, conv, dy,
                       TWDNN_CONV_BWD_FILTER_ALGO_1, requested, returned, perf);
}

/* Workspace sizes: the algorithm above needs none. */
static int no_workspace(const char *fn, void *handle, const void *x, const void *w, const void *conv, const void *y,
                        size_t *size)
{
    twdnn_tensor *xt, *yt;
    twdnn_filter *wt;
    twdnn_conv *ct;
    if (!twdnn_handle_get(handle))
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "%s: not a cuDNN handle", fn);
    int st = check_conv(fn, x, w, conv, y, &xt, &wt, &ct, &yt);
    if (st != TWDNN_STATUS_SUCCESS)
        return st;
    if (!size)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM_NULL_POINTER, "%s: sizeInBytes is NULL", fn);
    *size = 0;
    return TWDNN_STATUS_SUCCESS;
}

TW_EXPORT int cudnnGetConvolutionForwardWorkspaceSize(void *handle, const void *x, const void *w, const void *conv,
                                                      const void *y, int algo, size_t *size)
{
    (void)algo;
    return no_workspace("cudnnGetConvolutionForwardWorkspaceSize", handle, x, w, conv, y, size);
}
TW_EXPORT int cudnnGetConvolutionBackwardDataWorkspaceSize(void *handle, const void *w, const void *dy,
                                                           const void *conv, const void *dx, int algo, size_t *size)
{
    (void)algo;
    return no_workspace("cudnnGetConvolutionBackwardDataWorkspaceSize", handle, dx, w, conv, dy, size);
}
TW_EXPORT int cudnnGetConvolutionBackwardFilterWorkspaceSize(void *handle, const void *x, const void *dy,
                                                             const void *conv, const void *dw, int algo,
                                                             size_t *size)
{
    (void)algo;
    return no_workspace("cudnnGetConvolutionBackwardFilterWorkspaceSize", handle, x, dw, conv, dy, size);
}

/* ------------------------------------------------------------------ the convolutions */
static int run_conv(const char *fn, conv_pass pass, void *handle, const void *x, const void *w, const void *conv,
                    const void *y, double extra_bytes)
{
    twdnn_handle *h = twdnn_handle_get(handle);
    twdnn_tensor *xt, *yt;
    twdnn_filter *wt;
    twdnn_conv *ct;
    if (!h)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "%s: not a cuDNN handle", fn);
    int st = check_conv(fn, x, w, conv, y, &xt, &wt, &ct, &yt);
    if (st != TWDNN_STATUS_SUCCESS)
        return st;
    tw_stream *s = twdnn_handle_stream(h);
    if (!s)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM_STREAM_MISMATCH, "%s: the handle's stream is gone", fn);
    tw_err e = twdnn_launch_roofline(s, pass_kernel[pass], fn, conv_flops(yt, wt),
                                     conv_bytes(xt, wt, yt) + extra_bytes, xt->dtype);
    if (e != TW_OK)
        return twdnn_fail(TWDNN_STATUS_EXECUTION_FAILED_CUDART, "%s: launch failed (%d)", fn, (int)e);
    return TWDNN_STATUS_SUCCESS;
}

TW_EXPORT int cudnnConvolutionForward(void *handle, const void *alpha, const void *x_desc, const void *x,
                                      const void *w_desc, const void *w, const void *conv, int algo, void *ws,
                                      size_t ws_size, const void *beta, const void *y_desc, void *y)
{
    (void)alpha; (void)x; (void)w; (void)algo; (void)ws; (void)ws_size; (void)beta; (void)y;
    return run_conv("cudnnConvolutionForward", PASS_FWD, handle, x_desc, w_desc, conv, y_desc, 0);
}

TW_EXPORT int cudnnConvolutionBackwardData(void *handle, const void *alpha, const void *w_desc, const void *w,
                                           const void *dy_desc, const void *dy, const void *conv, int algo, void *ws,
                                           size_t ws_size, const void *beta, const void *dx_desc, void *dx)
{
    (void)alpha; (void)w; (void)dy; (void)algo; (void)ws; (void)ws_size; (void)beta; (void)dx;
    return run_conv("cudnnConvolutionBackwardData", PASS_BWD_DATA, handle, dx_desc, w_desc, conv, dy_desc, 0);
}

TW_EXPORT int cudnnConvolutionBackwardFilter(void *handle, const void *alpha, const void *x_desc, const void *x,
                                             const void *dy_desc, const void *dy, const void *conv, int algo,
                                             void *ws, size_t ws_size, const void *beta, const void *dw_desc,
                                             void *dw)
{
    (void)alpha; (void)x; (void)dy; (void)algo; (void)ws; (void)ws_size; (void)beta; (void)dw;
    return run_conv("cudnnConvolutionBackwardFilter", PASS_BWD_FILTER, handle, x_desc, dw_desc, conv, dy_desc, 0);
}

TW_EXPORT int cudnnConvolutionBiasActivationForward(void *handle, const void *alpha1, const void *x_desc,
                                                    const void *x, const void *w_desc, const void *w,
                                                    const void *conv, int algo, void *ws, size_t ws_size,
                                                    const void *alpha2, const void *z_desc, const void *z,
                                                    const void *bias_desc, const void *bias, const void *act_desc,
                                                    const void *y_desc, void *y)
{
    (void)alpha1; (void)x; (void)w; (void)algo; (void)ws; (void)ws_size; (void)alpha2; (void)z; (void)bias;
    (void)act_desc; (void)y;
    /* the residual z and the bias are read once more than a plain convolution reads */
    double extra = 0;
    twdnn_tensor *zt = twdnn_tensor_get(z_desc), *bt = twdnn_tensor_get(bias_desc);
    if (zt)
        extra += twdnn_tensor_numel(zt) * (double)twdnn_dtype_size(zt->dtype);
    if (bt)
        extra += twdnn_tensor_numel(bt) * (double)twdnn_dtype_size(bt->dtype);
    return run_conv("cudnnConvolutionBiasActivationForward", PASS_FWD, handle, x_desc, w_desc, conv, y_desc, extra);
}
