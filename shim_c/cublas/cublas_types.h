/* cuBLAS (libcublas.so.13) declarations used by the fake library and by the fake cuBLASLt.
 *
 * Written for timewarp from the documented CUDA 13 / cuBLAS 13.1 ABI: enum values and struct layouts are the
 * public ones (checked against the cuBLAS 13.1 wheel's headers); no NVIDIA header text is reproduced.
 *
 * Data model: kernels never run. Every GEMM-like call validates its arguments like the real library, then
 * enqueues one timed kernel op (with a TW_ANN_GEMM annotation) on the handle's stream. Output matrices and
 * vectors keep whatever the memory held before the call. Exceptions, written at call time: results that the
 * API returns in host memory (dot products in CUBLAS_POINTER_MODE_HOST: 0; LAPACK-style host `info`: 0) and
 * the device info arrays of the batched factorizations (zeroed where the memory is backed, i.e. "success").
 */
#ifndef TW_CUBLAS_TYPES_H
#define TW_CUBLAS_TYPES_H

#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------- cublasStatus_t */
typedef enum {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_INITIALIZED = 1,
    CUBLAS_STATUS_ALLOC_FAILED = 3,
    CUBLAS_STATUS_INVALID_VALUE = 7,
    CUBLAS_STATUS_ARCH_MISMATCH = 8,
    CUBLAS_STATUS_MAPPING_ERROR = 11,
    CUBLAS_STATUS_EXECUTION_FAILED = 13,
    CUBLAS_STATUS_INTERNAL_ERROR = 14,
    CUBLAS_STATUS_NOT_SUPPORTED = 15,
    CUBLAS_STATUS_LICENSE_ERROR = 16,
} cublasStatus_t;

/* ---------------------------------------------------------------- small enums */
typedef enum { CUBLAS_FILL_MODE_LOWER = 0, CUBLAS_FILL_MODE_UPPER = 1, CUBLAS_FILL_MODE_FULL = 2 } cublasFillMode_t;
typedef enum { CUBLAS_DIAG_NON_UNIT = 0, CUBLAS_DIAG_UNIT = 1 } cublasDiagType_t;
typedef enum { CUBLAS_SIDE_LEFT = 0, CUBLAS_SIDE_RIGHT = 1 } cublasSideMode_t;
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2, CUBLAS_OP_CONJG = 3 } cublasOperation_t;
typedef enum { CUBLAS_POINTER_MODE_HOST = 0, CUBLAS_POINTER_MODE_DEVICE = 1 } cublasPointerMode_t;
typedef enum { CUBLAS_ATOMICS_NOT_ALLOWED = 0, CUBLAS_ATOMICS_ALLOWED = 1 } cublasAtomicsMode_t;

/* cublasGemmAlgo_t: -1 default, 0..23 explicit, 99 default tensor op, 100..115 tensor op, 999 autotune */
typedef int cublasGemmAlgo_t;
#define CUBLAS_GEMM_DEFAULT (-1)
#define CUBLAS_GEMM_DEFAULT_TENSOR_OP 99
#define CUBLAS_GEMM_AUTOTUNE 999

/* cublasMath_t: base modes, optionally or'ed with the "disallow reduced precision reduction" flag */
typedef int cublasMath_t;
#define CUBLAS_DEFAULT_MATH 0
#define CUBLAS_TENSOR_OP_MATH 1
#define CUBLAS_PEDANTIC_MATH 2
#define CUBLAS_TF32_TENSOR_OP_MATH 3
#define CUBLAS_FP32_EMULATED_BF16X9_MATH 4
#define CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH 8
#define CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION 16

/* cublasComputeType_t */
typedef enum {
    CUBLAS_COMPUTE_16F = 64,
    CUBLAS_COMPUTE_16F_PEDANTIC = 65,
    CUBLAS_COMPUTE_32F = 68,
    CUBLAS_COMPUTE_32F_PEDANTIC = 69,
    CUBLAS_COMPUTE_64F = 70,
    CUBLAS_COMPUTE_64F_PEDANTIC = 71,
    CUBLAS_COMPUTE_32I = 72,
    CUBLAS_COMPUTE_32I_PEDANTIC = 73,
    CUBLAS_COMPUTE_32F_FAST_16F = 74,
    CUBLAS_COMPUTE_32F_FAST_16BF = 75,
    CUBLAS_COMPUTE_32F_FAST_TF32 = 77,
    CUBLAS_COMPUTE_32F_EMULATED_16BFX9 = 78,
    CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT = 79,
} cublasComputeType_t;

/* cudaDataType_t (library_types.h) */
typedef enum {
    CUDA_R_32F = 0, CUDA_R_64F = 1, CUDA_R_16F = 2, CUDA_R_8I = 3, CUDA_C_32F = 4, CUDA_C_64F = 5,
    CUDA_C_16F = 6, CUDA_C_8I = 7, CUDA_R_8U = 8, CUDA_C_8U = 9, CUDA_R_32I = 10, CUDA_C_32I = 11,
    CUDA_R_32U = 12, CUDA_C_32U = 13, CUDA_R_16BF = 14, CUDA_C_16BF = 15, CUDA_R_4I = 16, CUDA_C_4I = 17,
    CUDA_R_4U = 18, CUDA_C_4U = 19, CUDA_R_16I = 20, CUDA_C_16I = 21, CUDA_R_16U = 22, CUDA_C_16U = 23,
    CUDA_R_64I = 24, CUDA_C_64I = 25, CUDA_R_64U = 26, CUDA_C_64U = 27, CUDA_R_8F_E4M3 = 28,
    CUDA_R_8F_E5M2 = 29, CUDA_R_8F_UE8M0 = 30, CUDA_R_6F_E2M3 = 31, CUDA_R_6F_E3M2 = 32, CUDA_R_4F_E2M1 = 33,
} cudaDataType_t;
typedef cudaDataType_t cudaDataType;

typedef enum { MAJOR_VERSION = 0, MINOR_VERSION = 1, PATCH_LEVEL = 2 } libraryPropertyType;

/* floating point emulation knobs (library_types.h / cublas_api.h) */
typedef int cublasEmulationStrategy_t;          /* 0 default, 1 performant, 2 eager */
typedef int cudaEmulationSpecialValuesSupport;  /* bit mask, default 0xFFFF */
typedef int cudaEmulationMantissaControl;       /* 0 dynamic, 1 fixed */

/* Complex scalars (cuComplex.h): float2 / double2 */
typedef struct { float x, y; } __attribute__((aligned(8))) tw_cuComplex;
typedef struct { double x, y; } __attribute__((aligned(16))) tw_cuDoubleComplex;
typedef uint16_t tw_half; /* __half as 16 raw bits */

typedef void (*cublasLogCallback)(const char *msg);

/* cuBLAS 13.1.0 (the wheel torch 2.11+cu130 ships): CUBLAS_VERSION = 13*10000 + 1*100 + 0 */
#define TW_CUBLAS_VER_MAJOR 13
#define TW_CUBLAS_VER_MINOR 1
#define TW_CUBLAS_VER_PATCH 0
#define TW_CUBLAS_VERSION (TW_CUBLAS_VER_MAJOR * 10000 + TW_CUBLAS_VER_MINOR * 100 + TW_CUBLAS_VER_PATCH)
/* CUDA runtime version the library reports it was built with (CUDA 13.0) */
#define TW_CUBLAS_CUDART_VERSION 13000

/* ---------------------------------------------------------------- the handle (opaque to callers) */
#define TW_CUBLAS_MAGIC 0x74774C42u /* "twLB" */
struct cublasContext {
    uint32_t magic;
    int device;                 /* current device at cublasCreate */
    void *stream;               /* cudaStream_t as given (NULL: legacy default stream) */
    void *workspace;            /* user workspace (cublasSetWorkspace), NULL: library pool */
    size_t workspace_size;
    cublasMath_t math_mode;
    cublasPointerMode_t pointer_mode;
    cublasAtomicsMode_t atomics_mode;
    int sm_count_target;
    cublasEmulationStrategy_t emulation_strategy;
    cudaEmulationSpecialValuesSupport emulation_special;
    cudaEmulationMantissaControl mantissa_control;
    int max_mantissa_bits;
    int mantissa_bit_offset;
    int *mantissa_bit_count_ptr;
};
typedef struct cublasContext *cublasHandle_t;

#endif
