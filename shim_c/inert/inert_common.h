/* Shared bits of the inert stand-ins (cuSPARSE, cuFFT, cuRAND, cuSOLVER, NVRTC, nvJitLink, CUPTI, cuFile,
 * NVSHMEM, cuDNN sub-libraries). They implement only what must not return a plain status code (strings,
 * versions, handles that an import or a lazy init needs); everything else is a generated stub. */
#ifndef TW_INERT_COMMON_H
#define TW_INERT_COMMON_H

#include <stdint.h>
#include <stdlib.h>

#include "tw/core.h"

/* libraryPropertyType (library_types.h) */
enum { TW_MAJOR_VERSION = 0, TW_MINOR_VERSION = 1, TW_PATCH_LEVEL = 2 };

static inline int tw_inert_property(int type, int *value, int major, int minor, int patch)
{
    if (!value) return -1;
    switch (type) {
    case TW_MAJOR_VERSION: *value = major; return 0;
    case TW_MINOR_VERSION: *value = minor; return 0;
    case TW_PATCH_LEVEL: *value = patch; return 0;
    default: return -1;
    }
}

/* A library handle that only remembers its stream, so create/set-stream/destroy succeed. */
typedef struct tw_inert_handle {
    uint64_t magic;
    void *stream;
    int pointer_mode;
} tw_inert_handle;

static inline tw_inert_handle *tw_inert_handle_new(uint64_t magic)
{
    tw_inert_handle *h = (tw_inert_handle *)calloc(1, sizeof *h);
    if (h) h->magic = magic;
    return h;
}

static inline int tw_inert_handle_ok(const void *p, uint64_t magic)
{
    return p && ((const tw_inert_handle *)p)->magic == magic;
}

static inline void tw_inert_handle_free(void *p)
{
    if (p) {
        ((tw_inert_handle *)p)->magic = 0;
        free(p);
    }
}

#endif
