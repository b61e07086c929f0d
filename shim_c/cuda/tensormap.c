/* Tensor Memory Accelerator descriptors. Arguments are validated as the driver documents them (CUDA 13.0
 * cuTensorMapEncodeTiled / cuTensorMapEncodeIm2col); the 128-byte opaque CUtensorMap gets timewarp's own encoding,
 * which no kernel ever reads:
 *   q[0]      magic "TWTM" (32 bits) | kind (8) | rank (8) | data type (8) | interleave (4) | swizzle (4)
 *   q[1]      global address
 *   q[2..6]   global dimensions
 *   q[7..10]  global strides (bytes)
 *   q[11]     box dimensions, 9 bits each | element strides, 4 bits each from bit 45
 *   q[12]     l2 promotion (8) | oob fill (8) | channels per pixel (16) | pixels per column (32)   [im2col]
 *   q[13]     lower corner, 3 x 16 bits (im2col)
 *   q[14]     upper corner, 3 x 16 bits (im2col) */
#include <string.h>

#include "cu_internal.h"

#define TM_MAGIC 0x5457544dull /* "TWTM" */
enum { KIND_TILED = 1, KIND_IM2COL = 2 };
enum { DT_16U4_ALIGN8B = 13, DT_16U4_ALIGN16B = 14, DT_16U6_ALIGN16B = 15, DT_MAX = 15 };

/* element size in bytes (packed types: 0, handled apart) */
static int elem_size(int dt)
{
    static const int sz[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4, 0, 0, 0};
    return dt >= 0 && dt <= DT_MAX ? sz[dt] : -1;
}

static int is_float(int dt)
{
    return dt >= 6 && dt <= 12;   /* FLOAT16 .. TFLOAT32_FTZ */
}

static int device_sm(void)
{
    const tw_gpu_spec *s = tw_device_spec(cu_current_device());
    return s ? s->cc_major * 10 + s->cc_minor : 90;
}

/* The checks common to both layouts. */
static CUresult check_common(const CUtensorMap *map, int dt, unsigned rank, unsigned min_rank, const void *addr,
                             const cuuint64_t *dims, const cuuint64_t *strides, const cuuint32_t *estrides,
                             int interleave, int swizzle, int l2, int oob)
{
    if (!map || ((uintptr_t)map & 63))
        return CUDA_ERROR_INVALID_VALUE;
    if (device_sm() < 90)
        return CUDA_ERROR_NOT_SUPPORTED;
    int packed = dt >= DT_16U4_ALIGN8B;
    if (dt < 0 || dt > DT_MAX || (packed && device_sm() < 100))
        return CUDA_ERROR_INVALID_VALUE;
    if (rank < min_rank || rank > 5 || (interleave != 0 && rank < 3))
        return CUDA_ERROR_INVALID_VALUE;
    if (interleave < 0 || interleave > 2 || swizzle < 0 || swizzle > 6 || l2 < 0 || l2 > 3 || oob < 0 || oob > 1)
        return CUDA_ERROR_INVALID_VALUE;
    if (swizzle >= 4 && device_sm() < 100)   /* the 128B atom variants are Blackwell features */
        return CUDA_ERROR_INVALID_VALUE;
    if (interleave == 2 && swizzle != 1)
        return CUDA_ERROR_INVALID_VALUE;
    if (oob && (!is_float(dt) || packed))
        return CUDA_ERROR_INVALID_VALUE;
    if (dt == DT_16U6_ALIGN16B && interleave != 0)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned addr_align = (interleave == 2 || dt == DT_16U4_ALIGN16B || dt == DT_16U6_ALIGN16B) ? 32 : 16;
    if ((uintptr_t)addr % addr_align)
        return CUDA_ERROR_INVALID_VALUE;
    if (!dims || !estrides || (rank > 1 && !strides))
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < rank; i++) {
        if (dims[i] == 0 || dims[i] > (1ull << 32))
            return CUDA_ERROR_INVALID_VALUE;
        if (estrides[i] == 0 || estrides[i] > 8)
            return CUDA_ERROR_INVALID_VALUE;
    }
    if ((dt == DT_16U4_ALIGN16B || dt == DT_16U6_ALIGN16B) && dims[0] % 128)
        return CUDA_ERROR_INVALID_VALUE;
    if (dt == DT_16U4_ALIGN8B && dims[0] % 2)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned stride_align = (interleave == 2 || dt == DT_16U4_ALIGN16B || dt == DT_16U6_ALIGN16B) ? 32 : 16;
    for (unsigned i = 0; i + 1 < rank; i++)
        if (strides[i] % stride_align || strides[i] >= (1ull << 40))
            return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

static CUresult check_swizzle_span(int interleave, int swizzle, uint64_t inner_bytes)
{
    if (interleave != 0 || swizzle == 0)
        return CUDA_SUCCESS;
    uint64_t span = swizzle == 1 ? 32 : swizzle == 2 ? 64 : 128;
    return inner_bytes <= span ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* bytes of n elements of type dt */
static uint64_t bytes_of(int dt, uint64_t n)
{
    if (dt == DT_16U4_ALIGN8B) return n / 2;
    if (dt == DT_16U4_ALIGN16B || dt == DT_16U6_ALIGN16B) return n;   /* 16 values in a 16-byte slot */
    return n * (uint64_t)elem_size(dt);
}

static void encode_common(CUtensorMap *map, int kind, int dt, unsigned rank, void *addr, const cuuint64_t *dims,
                          const cuuint64_t *strides, const cuuint32_t *estrides, int interleave, int swizzle, int l2,
                          int oob)
{
    memset(map, 0, sizeof *map);
    uint64_t *q = map->opaque;
    q[0] = TM_MAGIC | (uint64_t)kind << 32 | (uint64_t)rank << 40 | (uint64_t)dt << 48 |
           (uint64_t)(interleave & 0xf) << 56 | (uint64_t)(swizzle & 0xf) << 60;
    q[1] = (uint64_t)(uintptr_t)addr;
    for (unsigned i = 0; i < rank; i++) {
        q[2 + i] = dims[i];
        if (i + 1 < rank)
            q[7 + i] = strides[i];
        q[11] |= (uint64_t)((estrides[i] - 1) & 0xf) << (45 + 4 * i);
    }
    q[12] = (uint64_t)(l2 & 0xff) | (uint64_t)(oob & 0xff) << 8;
}

TW_EXPORT CUresult cuTensorMapEncodeTiled(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
                                          cuuint32_t tensorRank, void *globalAddress, const cuuint64_t *globalDim,
                                          const cuuint64_t *globalStrides, const cuuint32_t *boxDim,
                                          const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
                                          CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
                                          CUtensorMapFloatOOBfill oobFill)
{
    cu_enter();
    CUresult r = check_common(tensorMap, tensorDataType, tensorRank, 1, globalAddress, globalDim, globalStrides,
                              elementStrides, interleave, swizzle, l2Promotion, oobFill);
    if (r != CUDA_SUCCESS)
        return r;
    if (!boxDim)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < tensorRank; i++)
        if (boxDim[i] == 0 || boxDim[i] > 256)
            return CUDA_ERROR_INVALID_VALUE;
    int dt = tensorDataType;
    if ((dt == DT_16U4_ALIGN16B || dt == DT_16U6_ALIGN16B) && boxDim[0] != 128)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t inner = bytes_of(dt, boxDim[0]);
    if (interleave == 0 && inner % 16)
        return CUDA_ERROR_INVALID_VALUE;
    r = check_swizzle_span(interleave, swizzle, inner);
    if (r != CUDA_SUCCESS)
        return r;
    encode_common(tensorMap, KIND_TILED, dt, tensorRank, globalAddress, globalDim, globalStrides, elementStrides,
                  interleave, swizzle, l2Promotion, oobFill);
    for (unsigned i = 0; i < tensorRank; i++)
        tensorMap->opaque[11] |= (uint64_t)((boxDim[i] - 1) & 0x1ff) << (9 * i);
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuTensorMapEncodeIm2col(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
                                           cuuint32_t tensorRank, void *globalAddress, const cuuint64_t *globalDim,
                                           const cuuint64_t *globalStrides, const int *pixelBoxLowerCorner,
                                           const int *pixelBoxUpperCorner, cuuint32_t channelsPerPixel,
                                           cuuint32_t pixelsPerColumn, const cuuint32_t *elementStrides,
                                           CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                           CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill)
{
    cu_enter();
    CUresult r = check_common(tensorMap, tensorDataType, tensorRank, 3, globalAddress, globalDim, globalStrides,
                              elementStrides, interleave, swizzle, l2Promotion, oobFill);
    if (r != CUDA_SUCCESS)
        return r;
    if (!pixelBoxLowerCorner || !pixelBoxUpperCorner)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned nc = tensorRank - 2;   /* spatial dimensions: W, H, D */
    int lim = tensorRank == 3 ? 32768 : tensorRank == 4 ? 128 : 16;
    for (unsigned i = 0; i < nc; i++) {
        if (pixelBoxLowerCorner[i] < -lim || pixelBoxLowerCorner[i] > lim - 1 ||
            pixelBoxUpperCorner[i] < -lim || pixelBoxUpperCorner[i] > lim - 1)
            return CUDA_ERROR_INVALID_VALUE;
    }
    int dt = tensorDataType;
    if (channelsPerPixel == 0 || channelsPerPixel > 256 || pixelsPerColumn == 0 || pixelsPerColumn > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    if ((dt == DT_16U4_ALIGN16B || dt == DT_16U6_ALIGN16B) && channelsPerPixel != 128)
        return CUDA_ERROR_INVALID_VALUE;
    r = check_swizzle_span(interleave, swizzle, bytes_of(dt, channelsPerPixel));
    if (r != CUDA_SUCCESS)
        return r;
    encode_common(tensorMap, KIND_IM2COL, dt, tensorRank, globalAddress, globalDim, globalStrides, elementStrides,
                  interleave, swizzle, l2Promotion, oobFill);
    uint64_t *q = tensorMap->opaque;
    q[12] |= (uint64_t)(channelsPerPixel & 0xffff) << 16 | (uint64_t)pixelsPerColumn << 32;
    for (unsigned i = 0; i < nc; i++) {
        q[13] |= (uint64_t)(uint16_t)pixelBoxLowerCorner[i] << (16 * i);
        q[14] |= (uint64_t)(uint16_t)pixelBoxUpperCorner[i] << (16 * i);
    }
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuTensorMapReplaceAddress(CUtensorMap *tensorMap, void *globalAddress)
{
    cu_enter();
    if (!tensorMap || ((uintptr_t)tensorMap & 63))
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t h = tensorMap->opaque[0];
    if ((h & 0xffffffffull) != TM_MAGIC)
        return CUDA_ERROR_INVALID_VALUE;
    int dt = (int)(h >> 48 & 0xff), interleave = (int)(h >> 56 & 0xf);
    unsigned align = (interleave == 2 || dt == DT_16U4_ALIGN16B || dt == DT_16U6_ALIGN16B) ? 32 : 16;
    if ((uintptr_t)globalAddress % align)
        return CUDA_ERROR_INVALID_VALUE;
    tensorMap->opaque[1] = (uint64_t)(uintptr_t)globalAddress;
    return CUDA_SUCCESS;
}
