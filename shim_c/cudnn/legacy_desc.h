/* Layouts of the legacy descriptors (private to this library). */
#ifndef TW_CUDNN_LEGACY_DESC_H
#define TW_CUDNN_LEGACY_DESC_H

#include <stdint.h>

#include "cudnn_types.h"

#define TWDNN_TENSOR_MAGIC 0x736e6554u      /* "Tens" */
#define TWDNN_FILTER_MAGIC 0x746c6946u      /* "Filt" */
#define TWDNN_CONV_MAGIC 0x766e6f43u        /* "Conv" */
#define TWDNN_ACTIVATION_MAGIC 0x76697443u  /* "Ctiv" */

typedef struct {
    uint32_t magic;
    int dtype;
    int nb;
    int dims[TWDNN_DIM_MAX];
    int strides[TWDNN_DIM_MAX];
} twdnn_tensor;

typedef struct {
    uint32_t magic;
    int dtype;
    int format;
    int nb;
    int dims[TWDNN_DIM_MAX];   /* K, C/groups, spatial... whatever the format */
} twdnn_filter;

typedef struct {
    uint32_t magic;
    int n;                     /* spatial dimensions */
    int pad[TWDNN_DIM_MAX], stride[TWDNN_DIM_MAX], dilation[TWDNN_DIM_MAX];
    int mode, compute, groups, math, reorder;
} twdnn_conv;

typedef struct {
    uint32_t magic;
    int mode, nan_prop;
    double coef;
} twdnn_activation;

twdnn_tensor *twdnn_tensor_get(const void *p);
twdnn_filter *twdnn_filter_get(const void *p);
twdnn_conv *twdnn_conv_get(const void *p);
double twdnn_tensor_numel(const twdnn_tensor *t);
double twdnn_filter_numel(const twdnn_filter *f);

#endif
