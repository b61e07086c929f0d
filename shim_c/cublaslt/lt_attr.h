/* Table-driven attribute storage for the cuBLASLt descriptors: every attribute id maps to a field of the
 * descriptor; Set requires the exact size of that field (as the real library does), Get answers the size when
 * sizeInBytes is 0 and otherwise copies the field into a buffer at least that large. */
#ifndef TW_LT_ATTR_H
#define TW_LT_ATTR_H

#include "cublaslt_types.h"

typedef struct {
    int id;
    uint16_t off;
    uint16_t size;
} tw_lt_attr;

#define TW_LT_ATTR(ID, TYPE, FIELD) { (ID), (uint16_t)__builtin_offsetof(TYPE, FIELD), (uint16_t)sizeof(((TYPE *)0)->FIELD) }
#define TW_LT_NATTR(tab) (sizeof(tab) / sizeof((tab)[0]))

static inline const tw_lt_attr *tw_lt_attr_find(const tw_lt_attr *tab, size_t n, int id)
{
    for (size_t i = 0; i < n; i++)
        if (tab[i].id == id) return &tab[i];
    return NULL;
}

static inline cublasStatus_t tw_lt_attr_set(void *obj, const tw_lt_attr *tab, size_t n, int id, const void *buf,
                                            size_t size)
{
    const tw_lt_attr *a = tw_lt_attr_find(tab, n, id);
    if (!a || !buf || size != a->size) return CUBLAS_STATUS_INVALID_VALUE;
    memcpy((char *)obj + a->off, buf, size);
    return CUBLAS_STATUS_SUCCESS;
}

static inline cublasStatus_t tw_lt_attr_get(const void *obj, const tw_lt_attr *tab, size_t n, int id, void *buf,
                                            size_t size, size_t *written)
{
    const tw_lt_attr *a = tw_lt_attr_find(tab, n, id);
    if (!a) return CUBLAS_STATUS_INVALID_VALUE;
    if (size == 0) {
        if (!written) return CUBLAS_STATUS_INVALID_VALUE;
        *written = a->size;
        return CUBLAS_STATUS_SUCCESS;
    }
    if (!buf || size < a->size) return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(buf, (const char *)obj + a->off, a->size);
    if (written) *written = a->size;
    return CUBLAS_STATUS_SUCCESS;
}

#endif
