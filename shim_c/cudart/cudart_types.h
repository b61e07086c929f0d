/* CUDA runtime (libcudart.so.13) types used by the timewarp runtime front end. Written for timewarp: values
 * and layouts follow the CUDA 13.0 runtime API (driver_types.h / cuda_runtime_api.h of the cu13 wheel);
 * nothing here is NVIDIA's text. Only what shim_c/cudart/ implements is declared. */
#ifndef TW_CUDART_TYPES_H
#define TW_CUDART_TYPES_H

#include <stddef.h>
#include <stdint.h>
#include "tw/cuda_types.h"

typedef tw_dim3 dim3;
typedef int cudaError_t;

/* cudaError_t values the shim returns (same numbers as the CUDA 13 enum) */
enum {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInitializationError = 3,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidPitchValue = 12,
    cudaErrorInvalidSymbol = 13,
    cudaErrorInvalidHostPointer = 16,
    cudaErrorInvalidDevicePointer = 17,
    cudaErrorInvalidMemcpyDirection = 21,
    cudaErrorMissingConfiguration = 52,
    cudaErrorInvalidDeviceFunction = 98,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
    cudaErrorUnsupportedLimit = 215,
    cudaErrorPeerAccessUnsupported = 217,
    cudaErrorOperatingSystem = 304,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorIllegalState = 401,
    cudaErrorSymbolNotFound = 500,
    cudaErrorNotReady = 600,
    cudaErrorLaunchOutOfResources = 701,
    cudaErrorPeerAccessAlreadyEnabled = 704,
    cudaErrorPeerAccessNotEnabled = 705,
    cudaErrorHostMemoryAlreadyRegistered = 712,
    cudaErrorHostMemoryNotRegistered = 713,
    cudaErrorCooperativeLaunchTooLarge = 720,
    cudaErrorNotPermitted = 800,
    cudaErrorNotSupported = 801,
    cudaErrorStreamCaptureUnsupported = 900,
    cudaErrorGraphExecUpdateFailure = 910,
    cudaErrorUnknown = 999,
};

/* Handles. Streams are core handles (or the magic 0x1 legacy / 0x2 per-thread values), so they are kept as
 * void *; events, graphs and kernels are the core's objects. */
typedef void *cudaStream_t;
typedef struct tw_event *cudaEvent_t;
typedef struct tw_graph *cudaGraph_t;
typedef struct tw_graph_node *cudaGraphNode_t;
typedef struct tw_graph_exec *cudaGraphExec_t;
typedef struct tw_kernel *cudaKernel_t;
typedef struct tw_kernel *cudaFunction_t;
typedef struct cudart_mempool *cudaMemPool_t;
typedef void (*cudaHostFn_t)(void *userData);
typedef void (*cudaStreamCallback_t)(cudaStream_t stream, cudaError_t status, void *userData);

typedef struct tw_cudaDeviceProp cudaDeviceProp;

/* cudaMemcpyKind */
enum { cudaMemcpyHostToHost = 0, cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2,
       cudaMemcpyDeviceToDevice = 3, cudaMemcpyDefault = 4 };

/* cudaMemoryType */
enum { cudaMemoryTypeUnregistered = 0, cudaMemoryTypeHost = 1, cudaMemoryTypeDevice = 2,
       cudaMemoryTypeManaged = 3 };

struct cudaPointerAttributes {
    int type;               /* enum cudaMemoryType */
    int device;
    void *devicePointer;
    void *hostPointer;
    long reserved[8];
};

struct cudaFuncAttributes {
    size_t sharedSizeBytes;
    size_t constSizeBytes;
    size_t localSizeBytes;
    int maxThreadsPerBlock;
    int numRegs;
    int ptxVersion;
    int binaryVersion;
    int cacheModeCA;
    int maxDynamicSharedSizeBytes;
    int preferredShmemCarveout;
    int clusterDimMustBeSet;
    int requiredClusterWidth;
    int requiredClusterHeight;
    int requiredClusterDepth;
    int clusterSchedulingPolicyPreference;
    int nonPortableClusterSizeAllowed;
    int reserved[16];
};

/* enum cudaFuncAttribute */
enum { cudaFuncAttributeMaxDynamicSharedMemorySize = 8, cudaFuncAttributePreferredSharedMemoryCarveout = 9,
       cudaFuncAttributeClusterDimMustBeSet = 10, cudaFuncAttributeRequiredClusterWidth = 11,
       cudaFuncAttributeRequiredClusterHeight = 12, cudaFuncAttributeRequiredClusterDepth = 13,
       cudaFuncAttributeNonPortableClusterSizeAllowed = 14,
       cudaFuncAttributeClusterSchedulingPolicyPreference = 15, cudaFuncAttributeMax = 16 };

/* enum cudaLaunchAttributeID (also the stream attribute ids) */
enum { cudaLaunchAttributeIgnore = 0, cudaLaunchAttributeAccessPolicyWindow = 1,
       cudaLaunchAttributeCooperative = 2, cudaLaunchAttributeSynchronizationPolicy = 3,
       cudaLaunchAttributeClusterDimension = 4, cudaLaunchAttributeClusterSchedulingPolicyPreference = 5,
       cudaLaunchAttributeProgrammaticStreamSerialization = 6, cudaLaunchAttributeProgrammaticEvent = 7,
       cudaLaunchAttributePriority = 8, cudaLaunchAttributeMemSyncDomainMap = 9,
       cudaLaunchAttributeMemSyncDomain = 10, cudaLaunchAttributePreferredClusterDimension = 11,
       cudaLaunchAttributeLaunchCompletionEvent = 12, cudaLaunchAttributeDeviceUpdatableKernelNode = 13,
       cudaLaunchAttributePreferredSharedMemoryCarveout = 14,
       cudaLaunchAttributeNvlinkUtilCentricScheduling = 16 };

typedef union cudaLaunchAttributeValue {
    char pad[64];
    struct { void *base_ptr; size_t num_bytes; float hitRatio; int hitProp; int missProp; } accessPolicyWindow;
    int cooperative;
    int syncPolicy;
    struct { unsigned int x, y, z; } clusterDim;
    int clusterSchedulingPolicyPreference;
    int programmaticStreamSerializationAllowed;
    struct { cudaEvent_t event; int flags; int triggerAtBlockStart; } programmaticEvent;
    int priority;
    struct { unsigned char default_, remote; } memSyncDomainMap;
    int memSyncDomain;
    struct { unsigned int x, y, z; } preferredClusterDim;
    struct { cudaEvent_t event; int flags; } launchCompletionEvent;
    struct { int deviceUpdatable; void *devNode; } deviceUpdatableKernelNode;
    unsigned int sharedMemCarveout;
    unsigned int nvlinkUtilCentricScheduling;
} cudaLaunchAttributeValue;

typedef struct cudaLaunchAttribute {
    int id;
    char pad[4];
    cudaLaunchAttributeValue val;
} cudaLaunchAttribute;

typedef struct cudaLaunchConfig {
    dim3 gridDim;
    dim3 blockDim;
    size_t dynamicSmemBytes;
    cudaStream_t stream;
    cudaLaunchAttribute *attrs;
    unsigned int numAttrs;
} cudaLaunchConfig_t;

#define CUDART_IPC_HANDLE_SIZE 64
typedef struct { char reserved[CUDART_IPC_HANDLE_SIZE]; } cudaIpcMemHandle_t;
typedef struct { char reserved[CUDART_IPC_HANDLE_SIZE]; } cudaIpcEventHandle_t;

/* enum cudaGraphExecUpdateResult */
enum { cudaGraphExecUpdateSuccess = 0, cudaGraphExecUpdateError = 1,
       cudaGraphExecUpdateErrorTopologyChanged = 2, cudaGraphExecUpdateErrorNotSupported = 6 };

typedef struct cudaGraphExecUpdateResultInfo {
    int result;
    cudaGraphNode_t errorNode;
    cudaGraphNode_t errorFromNode;
} cudaGraphExecUpdateResultInfo;

typedef struct cudaGraphInstantiateParams {
    unsigned long long flags;
    cudaStream_t uploadStream;
    cudaGraphNode_t errNode_out;
    int result_out;          /* cudaGraphInstantiateResult */
} cudaGraphInstantiateParams;

typedef struct cudaGraphEdgeData {
    unsigned char from_port;
    unsigned char to_port;
    unsigned char type;
    unsigned char reserved[5];
} cudaGraphEdgeData;

/* enum cudaGraphNodeType */
enum { cudaGraphNodeTypeKernel = 0, cudaGraphNodeTypeMemcpy = 1, cudaGraphNodeTypeMemset = 2,
       cudaGraphNodeTypeHost = 3, cudaGraphNodeTypeGraph = 4, cudaGraphNodeTypeEmpty = 5,
       cudaGraphNodeTypeWaitEvent = 6, cudaGraphNodeTypeEventRecord = 7 };

struct cudaKernelNodeParams {
    void *func;
    dim3 gridDim;
    dim3 blockDim;
    unsigned int sharedMemBytes;
    void **kernelParams;
    void **extra;
};

struct cudaHostNodeParams {
    cudaHostFn_t fn;
    void *userData;
};

struct cudaMemsetParamsV2 {
    void *dst;
    size_t pitch;
    unsigned int value;
    unsigned int elementSize;
    size_t width;
    size_t height;
};

/* cudaGraphAddNode's parameters: a type and a union of the per-type parameter structs */
struct cudaGraphNodeParams {
    int type;                        /* enum cudaGraphNodeType */
    int reserved0[3];
    union {
        long long reserved1[29];
        struct cudaKernelNodeParams kernel;   /* cudaKernelNodeParamsV2: same layout */
        struct cudaMemsetParamsV2 memset;
        struct cudaHostNodeParams host;       /* cudaHostNodeParamsV2: same layout */
        struct { cudaEvent_t event; } eventWait;
        struct { cudaEvent_t event; } eventRecord;
    } u;
    long long reserved2;
};

#define cudaUserObjectNoDestructorSync 0x1
#define cudaGraphUserObjectMove 0x1

/* memory pools */
enum { cudaMemPoolReuseFollowEventDependencies = 1, cudaMemPoolReuseAllowOpportunistic = 2,
       cudaMemPoolReuseAllowInternalDependencies = 3, cudaMemPoolAttrReleaseThreshold = 4,
       cudaMemPoolAttrReservedMemCurrent = 5, cudaMemPoolAttrReservedMemHigh = 6,
       cudaMemPoolAttrUsedMemCurrent = 7, cudaMemPoolAttrUsedMemHigh = 8 };
enum { cudaMemLocationTypeInvalid = 0, cudaMemLocationTypeDevice = 1, cudaMemLocationTypeHost = 2,
       cudaMemLocationTypeHostNuma = 3, cudaMemLocationTypeHostNumaCurrent = 4 };
enum { cudaMemAccessFlagsProtNone = 0, cudaMemAccessFlagsProtRead = 1, cudaMemAccessFlagsProtReadWrite = 3 };
enum { cudaMemAllocationTypeInvalid = 0, cudaMemAllocationTypePinned = 1, cudaMemAllocationTypeManaged = 2 };

struct cudaMemLocation {
    int type;                /* enum cudaMemLocationType */
    int id;
};

struct cudaMemAccessDesc {
    struct cudaMemLocation location;
    int flags;               /* enum cudaMemAccessFlags */
};

struct cudaMemPoolProps {
    int allocType;
    int handleTypes;
    struct cudaMemLocation location;
    void *win32SecurityAttributes;
    size_t maxSize;
    unsigned short usage;
    unsigned char reserved[54];
};

/* enum cudaLimit */
enum { cudaLimitStackSize = 0, cudaLimitPrintfFifoSize = 1, cudaLimitMallocHeapSize = 2,
       cudaLimitDevRuntimeSyncDepth = 3, cudaLimitDevRuntimePendingLaunchCount = 4,
       cudaLimitMaxL2FetchGranularity = 5, cudaLimitPersistingL2CacheSize = 6 };

/* enum cudaStreamCaptureStatus / cudaStreamCaptureMode */
enum { cudaStreamCaptureStatusNone = 0, cudaStreamCaptureStatusActive = 1,
       cudaStreamCaptureStatusInvalidated = 2 };
enum { cudaStreamCaptureModeGlobal = 0, cudaStreamCaptureModeThreadLocal = 1,
       cudaStreamCaptureModeRelaxed = 2 };

/* enum cudaDriverEntryPointQueryResult; cudaGetDriverEntryPoint flags */
enum { cudaDriverEntryPointSuccess = 0, cudaDriverEntryPointSymbolNotFound = 1,
       cudaDriverEntryPointVersionNotSufficent = 2 };
enum { cudaEnableDefault = 0, cudaEnableLegacyStream = 1, cudaEnablePerThreadDefaultStream = 2 };

/* flag values */
#define cudaStreamDefault            0x00
#define cudaStreamNonBlocking        0x01
#define cudaEventDefault             0x00
#define cudaEventBlockingSync        0x01
#define cudaEventDisableTiming       0x02
#define cudaEventInterprocess        0x04
#define cudaEventRecordExternal      0x01
#define cudaEventWaitExternal        0x01
#define cudaHostAllocPortable        0x01
#define cudaHostAllocMapped          0x02
#define cudaHostAllocWriteCombined   0x04
#define cudaHostRegisterPortable     0x01
#define cudaHostRegisterMapped       0x02
#define cudaHostRegisterIoMemory     0x04
#define cudaHostRegisterReadOnly     0x08
#define cudaMemAttachGlobal          0x01
#define cudaMemAttachHost            0x02
#define cudaMemAttachSingle          0x04
#define cudaDeviceScheduleMask       0x07
#define cudaDeviceMapHost            0x08
#define cudaDeviceLmemResizeToMax    0x10
#define cudaDeviceSyncMemops         0x80
#define cudaInitDeviceFlagsAreValid  0x01
#define cudaIpcMemLazyEnablePeerAccess 0x01
#define cudaOccupancyDefault         0x00
#define cudaOccupancyDisableCachingOverride 0x01
#define cudaGraphInstantiateFlagAutoFreeOnLaunch 1
#define cudaGraphInstantiateFlagUpload 2
#define cudaGraphInstantiateFlagDeviceLaunch 4
#define cudaGraphInstantiateFlagUseNodePriority 8

/* The argument of __cudaRegisterFatBinary */
typedef struct {
    int magic;               /* 0x466243b1 */
    int version;
    const void *data;
    void *filename_or_fatbins;
} tw_fatbin_wrapper;

#endif
