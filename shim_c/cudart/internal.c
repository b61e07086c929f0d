/* Internal helpers of the runtime front end: the lock-free-read pointer map. */
#include <stdlib.h>

#include "cudart_internal.h"

static inline size_t pm_hash(uintptr_t k, size_t cap)
{
    uint64_t h = (uint64_t)k * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    return (size_t)h & (cap - 1);
}

void *tw_pm_get(tw_ptrmap *m, const void *key)
{
    tw_pm_table *t = atomic_load_explicit(&m->table, memory_order_acquire);
    if (TW_UNLIKELY(!t || !key)) return NULL;
    uintptr_t k = (uintptr_t)key;
    size_t mask = t->cap - 1;
    for (size_t i = pm_hash(k, t->cap);; i = (i + 1) & mask) {
        uintptr_t sk = atomic_load_explicit(&t->slots[i].key, memory_order_acquire);
        if (sk == k) return atomic_load_explicit(&t->slots[i].val, memory_order_acquire);
        if (sk == 0) return NULL;
    }
}

static tw_pm_table *pm_new(size_t cap)
{
    tw_pm_table *t = calloc(1, sizeof(*t) + cap * sizeof(tw_pm_slot));
    if (t) t->cap = cap;
    return t;
}

/* Insert into t, which has room (caller holds the lock). Returns 1 if a new slot was taken. */
static int pm_insert(tw_pm_table *t, uintptr_t k, void *val)
{
    size_t mask = t->cap - 1;
    for (size_t i = pm_hash(k, t->cap);; i = (i + 1) & mask) {
        uintptr_t sk = atomic_load_explicit(&t->slots[i].key, memory_order_relaxed);
        if (sk == k) {
            atomic_store_explicit(&t->slots[i].val, val, memory_order_release);
            return 0;
        }
        if (sk == 0) {
            atomic_store_explicit(&t->slots[i].val, val, memory_order_relaxed);
            atomic_store_explicit(&t->slots[i].key, k, memory_order_release);
            return 1;
        }
    }
}

void tw_pm_put(tw_ptrmap *m, const void *key, void *val)
{
    if (!key) return;
    pthread_mutex_lock(&m->mu);
    tw_pm_table *t = atomic_load_explicit(&m->table, memory_order_relaxed);
    if (!val) { /* removal: clear the value where the key is present */
        if (t) {
            size_t mask = t->cap - 1;
            for (size_t i = pm_hash((uintptr_t)key, t->cap);; i = (i + 1) & mask) {
                uintptr_t sk = atomic_load_explicit(&t->slots[i].key, memory_order_relaxed);
                if (sk == (uintptr_t)key) {
                    atomic_store_explicit(&t->slots[i].val, NULL, memory_order_release);
                    break;
                }
                if (sk == 0) break;
            }
        }
        goto out;
    }
    if (!t || (m->used + 1) * 2 > t->cap) {
        size_t live = 0;
        if (t)
            for (size_t i = 0; i < t->cap; i++)
                if (atomic_load_explicit(&t->slots[i].val, memory_order_relaxed)) live++;
        size_t cap = 1024;
        while ((live + 1) * 4 > cap) cap *= 2;
        tw_pm_table *n = pm_new(cap);
        if (!n) goto out;
        size_t used = 0;
        if (t)
            for (size_t i = 0; i < t->cap; i++) {
                void *v = atomic_load_explicit(&t->slots[i].val, memory_order_relaxed);
                uintptr_t sk = atomic_load_explicit(&t->slots[i].key, memory_order_relaxed);
                if (v && sk) used += (size_t)pm_insert(n, sk, v);
            }
        m->used = used;
        atomic_store_explicit(&m->table, n, memory_order_release);
        t = n; /* the old table is left to readers that may still probe it */
    }
    m->used += (size_t)pm_insert(t, (uintptr_t)key, val);
out:
    pthread_mutex_unlock(&m->mu);
}

void tw_pm_each(tw_ptrmap *m, void (*fn)(const void *key, void *val, void *arg), void *arg)
{
    pthread_mutex_lock(&m->mu);
    tw_pm_table *t = atomic_load_explicit(&m->table, memory_order_relaxed);
    if (t)
        for (size_t i = 0; i < t->cap; i++) {
            void *v = atomic_load_explicit(&t->slots[i].val, memory_order_relaxed);
            uintptr_t sk = atomic_load_explicit(&t->slots[i].key, memory_order_relaxed);
            if (v && sk) fn((const void *)sk, v, arg);
        }
    pthread_mutex_unlock(&m->mu);
}
