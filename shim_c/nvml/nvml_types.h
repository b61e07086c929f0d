/* Declarations for the fake libnvidia-ml.so.1: the subset of NVML's ABI this front end implements.
 * Values and layouts are facts of the NVML ABI (checked against nvidia-ml-py's ctypes definitions);
 * the declarations are our own. */
#ifndef TW_NVML_TYPES_H
#define TW_NVML_TYPES_H

#include <stdint.h>

typedef int nvmlReturn_t;
enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_ALREADY_INITIALIZED = 5,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_INSUFFICIENT_POWER = 8,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_IRQ_ISSUE = 11,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_CORRUPTED_INFOROM = 14,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_RESET_REQUIRED = 16,
    NVML_ERROR_OPERATING_SYSTEM = 17,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
    NVML_ERROR_IN_USE = 19,
    NVML_ERROR_MEMORY = 20,
    NVML_ERROR_NO_DATA = 21,
    NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
    NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
    NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_DEPRECATED = 26,
    NVML_ERROR_NOT_READY = 27,
    NVML_ERROR_GPU_NOT_FOUND = 28,
    NVML_ERROR_INVALID_STATE = 29,
    NVML_ERROR_RESET_TYPE_NOT_SUPPORTED = 30,
    NVML_ERROR_UNKNOWN = 999,
};

/* A versioned struct carries sizeof(struct) | (version << 24) in its first field. */
#define TW_NVML_STRUCT_VERSION(type, ver) ((unsigned)(sizeof(type) | ((unsigned)(ver) << 24)))

typedef struct tw_nvml_device *nvmlDevice_t;

typedef enum { NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1 } nvmlEnableState_t;

enum { /* nvmlBrandType_t */ NVML_BRAND_NVIDIA = 14 };

enum { /* nvmlDeviceArchitecture_t */
    NVML_DEVICE_ARCH_KEPLER = 2, NVML_DEVICE_ARCH_MAXWELL = 3, NVML_DEVICE_ARCH_PASCAL = 4,
    NVML_DEVICE_ARCH_VOLTA = 5, NVML_DEVICE_ARCH_TURING = 6, NVML_DEVICE_ARCH_AMPERE = 7,
    NVML_DEVICE_ARCH_ADA = 8, NVML_DEVICE_ARCH_HOPPER = 9, NVML_DEVICE_ARCH_BLACKWELL = 10,
    NVML_DEVICE_ARCH_UNKNOWN = (int)0xffffffff,
};

enum { /* nvmlClockType_t */ NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_CLOCK_VIDEO = 3 };
enum { /* nvmlClockId_t */
    NVML_CLOCK_ID_CURRENT = 0, NVML_CLOCK_ID_APP_CLOCK_TARGET = 1, NVML_CLOCK_ID_APP_CLOCK_DEFAULT = 2,
    NVML_CLOCK_ID_CUSTOMER_BOOST_MAX = 3,
};
enum { /* nvmlTemperatureSensors_t */ NVML_TEMPERATURE_GPU = 0 };
enum { /* nvmlTemperatureThresholds_t */
    NVML_TEMPERATURE_THRESHOLD_SHUTDOWN = 0, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1,
    NVML_TEMPERATURE_THRESHOLD_MEM_MAX = 2, NVML_TEMPERATURE_THRESHOLD_GPU_MAX = 3,
};
enum { NVML_COMPUTEMODE_DEFAULT = 0 };
enum { NVML_PSTATE_0 = 0 };

enum { /* nvmlGpuP2PStatus_t */ NVML_P2P_STATUS_OK = 0, NVML_P2P_STATUS_NOT_SUPPORTED = 5 };
enum { /* nvmlGpuP2PCapsIndex_t */
    NVML_P2P_CAPS_INDEX_READ = 0, NVML_P2P_CAPS_INDEX_WRITE = 1, NVML_P2P_CAPS_INDEX_NVLINK = 2,
    NVML_P2P_CAPS_INDEX_ATOMICS = 3, NVML_P2P_CAPS_INDEX_PCI = 4, NVML_P2P_CAPS_INDEX_UNKNOWN = 5,
};
enum { /* nvmlGpuTopologyLevel_t */
    NVML_TOPOLOGY_INTERNAL = 0, NVML_TOPOLOGY_SINGLE = 10, NVML_TOPOLOGY_MULTIPLE = 20,
    NVML_TOPOLOGY_HOSTBRIDGE = 30, NVML_TOPOLOGY_NODE = 40, NVML_TOPOLOGY_SYSTEM = 50,
};
enum { /* nvmlIntNvLinkDeviceType_t */
    NVML_NVLINK_DEVICE_TYPE_GPU = 0, NVML_NVLINK_DEVICE_TYPE_SWITCH = 2, NVML_NVLINK_DEVICE_TYPE_UNKNOWN = 0xff,
};
enum { /* nvmlNvLinkCapability_t */
    NVML_NVLINK_CAP_P2P_SUPPORTED = 0, NVML_NVLINK_CAP_SYSMEM_ACCESS = 1, NVML_NVLINK_CAP_P2P_ATOMICS = 2,
    NVML_NVLINK_CAP_SYSMEM_ATOMICS = 3, NVML_NVLINK_CAP_SLI_BRIDGE = 4, NVML_NVLINK_CAP_VALID = 5,
};
enum { /* nvmlNvlinkVersion_t */
    NVML_NVLINK_VERSION_3_0 = 4, NVML_NVLINK_VERSION_4_0 = 6, NVML_NVLINK_VERSION_5_0 = 7,
};
#define NVML_NVLINK_MAX_LINKS 18   /* the C header's constant for the per-device link loop */
#define TW_NVML_LINK_SLOTS 36      /* link ids the newest NVML accepts without INVALID_ARGUMENT */

enum { NVML_PCIE_LINK_MAX_SPEED_32000MBPS = 5 };
enum { NVML_AFFINITY_SCOPE_NODE = 0, NVML_AFFINITY_SCOPE_SOCKET = 1 };

enum { /* nvmlValueType_t */
    NVML_VALUE_TYPE_DOUBLE = 0, NVML_VALUE_TYPE_UNSIGNED_INT = 1, NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
    NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3, NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4, NVML_VALUE_TYPE_SIGNED_INT = 5,
};

/* Field ids answered by nvmlDeviceGetFieldValues */
enum {
    NVML_FI_DEV_ECC_CURRENT = 1,
    NVML_FI_DEV_ECC_PENDING = 2,
    NVML_FI_DEV_MEMORY_TEMP = 82,
    NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION = 83,
    NVML_FI_DEV_NVLINK_SPEED_MBPS_L0 = 84,   /* .. L5 = 89 */
    NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON = 90,
    NVML_FI_DEV_NVLINK_LINK_COUNT = 91,
    NVML_FI_DEV_PCIE_REPLAY_COUNTER = 94,
    NVML_FI_DEV_NVLINK_SPEED_MBPS_L6 = 132,  /* .. L11 = 137 */
    NVML_FI_DEV_NVSWITCH_CONNECTED_LINK_COUNT = 147,
    NVML_FI_DEV_NVLINK_GET_SPEED = 164,
    NVML_FI_DEV_NVLINK_GET_STATE = 165,
    NVML_FI_DEV_NVLINK_GET_VERSION = 166,
    NVML_FI_DEV_C2C_LINK_COUNT = 170,
    NVML_FI_DEV_POWER_AVERAGE = 185,
    NVML_FI_DEV_POWER_INSTANT = 186,
    NVML_FI_DEV_POWER_MIN_LIMIT = 187,
    NVML_FI_DEV_POWER_MAX_LIMIT = 188,
    NVML_FI_DEV_POWER_DEFAULT_LIMIT = 189,
    NVML_FI_DEV_POWER_CURRENT_LIMIT = 190,
    NVML_FI_DEV_ENERGY = 191,
    NVML_FI_DEV_POWER_REQUESTED_LIMIT = 192,
    NVML_FI_DEV_TEMPERATURE_SHUTDOWN_TLIMIT = 193,
    NVML_FI_DEV_TEMPERATURE_SLOWDOWN_TLIMIT = 194,
    NVML_FI_DEV_TEMPERATURE_MEM_MAX_TLIMIT = 195,
    NVML_FI_DEV_TEMPERATURE_GPU_MAX_TLIMIT = 196,
};

typedef union {
    double dVal;
    unsigned int uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    long long sllVal;
    int siVal;
    unsigned short usVal;
} nvmlValue_t;

typedef struct {
    unsigned int fieldId;
    unsigned int scopeId;
    long long timestamp;     /* us since the epoch */
    long long latencyUsec;
    int valueType;
    nvmlReturn_t nvmlReturn;
    nvmlValue_t value;
} nvmlFieldValue_t;

#define TW_NVML_BUSID_LEGACY 16
#define TW_NVML_BUSID 32

/* nvmlDeviceGetPciInfo (v1): the original layout */
typedef struct {
    char busId[TW_NVML_BUSID_LEGACY];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
} tw_nvmlPciInfo_v1;

/* nvmlDeviceGetPciInfo_v2 */
typedef struct {
    char busId[TW_NVML_BUSID_LEGACY];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    unsigned int reserved0, reserved1, reserved2, reserved3;
} tw_nvmlPciInfo_v2;

/* nvmlPciInfo_t as of NVML 9+ (nvmlDeviceGetPciInfo_v3, NvLinkRemotePciInfo_v2) */
typedef struct {
    char busIdLegacy[TW_NVML_BUSID_LEGACY];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[TW_NVML_BUSID];
} nvmlPciInfo_t;

typedef struct {
    unsigned int version;
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId, baseClass, subClass;
    char busId[TW_NVML_BUSID];
} nvmlPciInfoExt_v1_t;

typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct {
    unsigned int version;
    unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;
typedef struct { unsigned long long bar1Total, bar1Free, bar1Used; } nvmlBAR1Memory_t;

typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;

typedef struct { unsigned int version; int sensorType; int temperature; } nvmlTemperature_v1_t;

typedef struct { unsigned int pid; unsigned long long usedGpuMemory; } tw_nvmlProcessInfo_v1;
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t; /* _v2 and _v3 */

typedef struct {
    unsigned int multiprocessorCount, sharedCopyEngineCount, sharedDecoderCount, sharedEncoderCount;
    unsigned int sharedJpegCount, sharedOfaCount, gpuInstanceSliceCount, computeInstanceSliceCount;
    unsigned long long memorySizeMB;
} nvmlDeviceAttributes_t;

#endif
