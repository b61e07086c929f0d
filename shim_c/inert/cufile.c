/* Inert libcufile.so.0 (GPUDirect Storage): version, and the calls torch.cuda.gds makes, answered with
 * CU_FILE_PLATFORM_NOT_SUPPORTED (5007). Functions returning CUfileError_t return it by value in rax
 * ({err, cu_err} packed in 8 bytes); cuFileRead/Write return ssize_t: minus the CUfileOpError code. */
#include <sys/types.h>

#include "inert_common.h"

typedef struct { int err; int cu_err; } tw_CUfileError_t;
#define CU_FILE_SUCCESS 0
#define CU_FILE_PLATFORM_NOT_SUPPORTED 5007
#define CU_FILE_INVALID_VALUE 5022

static tw_CUfileError_t res(int err)
{
    tw_CUfileError_t e = {err, 0};
    return e;
}

TW_EXPORT tw_CUfileError_t cuFileGetVersion(int *version)
{
    if (!version) return res(CU_FILE_INVALID_VALUE);
    *version = 1150; /* what the CUDA 13.0 wheel's libcufile reports */
    return res(CU_FILE_SUCCESS);
}

TW_EXPORT tw_CUfileError_t cuFileDriverOpen(void) { return res(CU_FILE_PLATFORM_NOT_SUPPORTED); }
TW_EXPORT tw_CUfileError_t cuFileDriverClose(void) { return res(CU_FILE_SUCCESS); }
TW_EXPORT tw_CUfileError_t cuFileDriverClose_v2(void) { return res(CU_FILE_SUCCESS); }

TW_EXPORT tw_CUfileError_t cuFileHandleRegister(void **fh, void *descr)
{
    (void)descr;
    if (fh) *fh = NULL;
    return res(CU_FILE_PLATFORM_NOT_SUPPORTED);
}

TW_EXPORT void cuFileHandleDeregister(void *fh) { (void)fh; }

TW_EXPORT tw_CUfileError_t cuFileBufRegister(const void *ptr, size_t len, int flags)
{
    (void)ptr; (void)len; (void)flags;
    return res(CU_FILE_PLATFORM_NOT_SUPPORTED);
}

TW_EXPORT tw_CUfileError_t cuFileBufDeregister(const void *ptr)
{
    (void)ptr;
    return res(CU_FILE_PLATFORM_NOT_SUPPORTED);
}

TW_EXPORT ssize_t cuFileRead(void *fh, void *buf, size_t size, off_t file_offset, off_t buf_offset)
{
    (void)fh; (void)buf; (void)size; (void)file_offset; (void)buf_offset;
    return -(ssize_t)CU_FILE_PLATFORM_NOT_SUPPORTED;
}

TW_EXPORT ssize_t cuFileWrite(void *fh, const void *buf, size_t size, off_t file_offset, off_t buf_offset)
{
    (void)fh; (void)buf; (void)size; (void)file_offset; (void)buf_offset;
    return -(ssize_t)CU_FILE_PLATFORM_NOT_SUPPORTED;
}
