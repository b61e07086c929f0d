/* Modules, libraries and functions: cuModule*, cuLibrary*, cuKernel*, cuFunc*.
 *
 * Images are cubins (ELF64, EM_CUDA), fatbinaries (magic 0xBA55ED50, or the 0x466243B1 wrapper that points to one)
 * or PTX text. Nothing is compiled or executed: a module only needs its kernels (names, for the core's kernel
 * identity, plus the attributes Triton reads back: registers, spills, static shared memory, maximum block size) and
 * its globals (name and size, for cuModuleGetGlobal).
 *   cubin: STT_FUNC symbols flagged as entries (st_other 0x10) are kernels, STT_OBJECT symbols are globals; the
 *          .nv.info sections give EIATTR_REGCOUNT / EIATTR_FRAME_SIZE per function and, per kernel, parameters
 *          (EIATTR_KPARAM_INFO) and launch bounds (EIATTR_MAX_THREADS / EIATTR_REQNTID); .nv.shared.<kernel> gives the
 *          static shared memory.
 *   fatbin: the cubin for the device's architecture (same major, minor not above), else the PTX; a compressed entry
 *          cannot be read, and the module is then "opaque": any kernel name resolves, with default attributes.
 *   PTX:   `.entry NAME` kernels and module-scope .global/.const variables; registers are unknown (32 assumed).
 *   cuLink*: nothing is linked; cuLinkComplete returns a container of the inputs that cuModuleLoadData reads as one
 *          module (archives and NVVM IR are accepted and ignored).
 * Globals get a device allocation (from the core, so backed when small) on first lookup, filled with the image's
 * initial data. */
#include <elf.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cu_internal.h"

#define EM_CUDA_ 190
#define FATBIN_MAGIC 0xBA55ED50u
#define FATBIN_WRAPPER_MAGIC 0x466243B1u
#define STO_CUDA_ENTRY 0x10

/* EIATTR ids and formats of .nv.info records */
#define EIFMT_SVAL 0x04
#define EIATTR_MAX_THREADS 0x05
#define EIATTR_REQNTID 0x10
#define EIATTR_FRAME_SIZE 0x11
#define EIATTR_KPARAM_INFO 0x17
#define EIATTR_REGCOUNT 0x2f

struct cu_global {
    char *name;
    size_t size;
    void *init;                  /* initial bytes (NULL: zeros) */
    uintptr_t dptr;              /* 0 until first looked up */
};

struct cu_module {
    uint32_t magic;
    int is_library;
    int device;
    int opaque;                  /* symbol table unknown: any kernel name resolves */
    int sm;                      /* architecture of the code (major*10+minor) */
    pthread_mutex_t lock;
    int nfuncs, capfuncs;
    struct cu_func **funcs;
    int nglobals;
    struct cu_global *globals;
    struct cu_module *next;
};

static pthread_mutex_t mod_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cu_module *modules;

static int mod_valid(const struct cu_module *m)
{
    if (!m)
        return 0;
    int ok = 0;
    pthread_mutex_lock(&mod_lock);
    for (struct cu_module *p = modules; p; p = p->next)
        if (p == m) { ok = m->magic == CU_MOD_MAGIC; break; }
    pthread_mutex_unlock(&mod_lock);
    return ok;
}

/* ---------------------------------------------------------------- building modules */
static int dev_attr(int dev, int attr, int dflt)
{
    int v;
    return tw_device_attr(dev, attr, &v) == TW_OK ? v : dflt;
}

/* The block size a kernel can launch with, given its registers (the register file is allocated per warp in
 * units of 256 registers) and its launch bounds. */
static int max_threads_for(int dev, int regs, int bound)
{
    int maxt = dev_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024);
    int rf = dev_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 65536);
    if (regs > 0) {
        int per_warp = ((regs * 32 + 255) / 256) * 256;
        int warps = rf / per_warp;
        if (warps * 32 < maxt)
            maxt = warps * 32;
    }
    if (bound > 0 && bound < maxt)
        maxt = bound;
    return maxt;
}

static struct cu_func *func_new(struct cu_module *m, const char *name)
{
    struct cu_func *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->kernel = tw_kernel_intern(name);
    if (!f->kernel) {
        free(f);
        return NULL;
    }
    f->magic = CU_FUNC_MAGIC;
    f->mod = m;
    f->name = f->kernel->name ? f->kernel->name : name;
    f->num_regs = 32;
    f->carveout = -1;
    f->n_params = -1;
    f->ptx_version = f->binary_version = m->sm;
    return f;
}

/* Fills what the image did not say and publishes the attributes to the core's kernel when it has none yet. */
static void func_finish(struct cu_module *m, struct cu_func *f, int bound)
{
    f->max_threads = max_threads_for(m->device, f->num_regs, bound);
    f->max_dyn_shared = 49152 - f->shared_static;
    if (f->max_dyn_shared < 0)
        f->max_dyn_shared = 0;
    tw_kernel *k = f->kernel;
    if (k->num_regs == 0) {
        k->num_regs = f->num_regs;
        k->local_bytes = f->local_bytes;
        k->shared_bytes = f->shared_static;
        k->const_bytes = f->const_bytes;
        k->max_threads = f->max_threads;
        k->max_dyn_shared = f->max_dyn_shared;
        if (k->n_params < 0 || k->n_params == 0)
            k->n_params = f->n_params;
    }
}

static int mod_add_func(struct cu_module *m, struct cu_func *f)
{
    if (m->nfuncs == m->capfuncs) {
        int cap = m->capfuncs ? m->capfuncs * 2 : 8;
        struct cu_func **n = realloc(m->funcs, (size_t)cap * sizeof *n);
        if (!n)
            return 0;
        m->funcs = n;
        m->capfuncs = cap;
    }
    m->funcs[m->nfuncs++] = f;
    return 1;
}

static int mod_add_global(struct cu_module *m, const char *name, size_t nlen, size_t size, const void *init)
{
    struct cu_global *n = realloc(m->globals, (size_t)(m->nglobals + 1) * sizeof *n);
    if (!n)
        return 0;
    m->globals = n;
    struct cu_global *g = &n[m->nglobals];
    memset(g, 0, sizeof *g);
    g->name = strndup(name, nlen);
    g->size = size;
    if (init && size) {
        g->init = malloc(size);
        if (g->init)
            memcpy(g->init, init, size);
    }
    if (!g->name)
        return 0;
    m->nglobals++;
    return 1;
}

/* ---------------------------------------------------------------- cubin */
struct func_info { uint32_t sym; int regs, frame; };

static int elf_sm(const Elf64_Ehdr *eh)
{
    /* ELF ABI version 8 (CUDA 12.9+ for sm_100 and later) moved the SM number to bits 8-15 */
    if (eh->e_ident[EI_ABIVERSION] >= 8)
        return (int)((eh->e_flags >> 8) & 0xff);
    return (int)(eh->e_flags & 0xff);
}

/* size is 0 when unknown (cuModuleLoadData): the image is trusted to be well formed. */
static CUresult parse_cubin(struct cu_module *m, const uint8_t *img, size_t size)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
    if (eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_machine != EM_CUDA_ || eh->e_shentsize != sizeof(Elf64_Shdr))
        return CUDA_ERROR_INVALID_IMAGE;
    if (size && (eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > size))
        return CUDA_ERROR_INVALID_IMAGE;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(img + eh->e_shoff);
    int nsec = eh->e_shnum;
    if (eh->e_shstrndx >= nsec)
        return CUDA_ERROR_INVALID_IMAGE;
    if (size)
        for (int i = 0; i < nsec; i++)
            if (sh[i].sh_type != SHT_NOBITS && sh[i].sh_offset + sh[i].sh_size > size)
                return CUDA_ERROR_INVALID_IMAGE;
    const char *shstr = (const char *)img + sh[eh->e_shstrndx].sh_offset;

    m->sm = elf_sm(eh);
    const tw_gpu_spec *spec = tw_device_spec(m->device);
    if (spec && m->sm >= 20 && m->sm < 1000) {
        int dev_sm = spec->cc_major * 10 + spec->cc_minor;
        /* a cubin runs on its major architecture at the same or a later minor revision */
        if (m->sm / 10 != dev_sm / 10 || m->sm > dev_sm)
            return CUDA_ERROR_NO_BINARY_FOR_GPU;
    }

    const Elf64_Shdr *symtab = NULL;
    for (int i = 0; i < nsec; i++)
        if (sh[i].sh_type == SHT_SYMTAB) { symtab = &sh[i]; break; }
    if (!symtab || symtab->sh_link >= (unsigned)nsec || symtab->sh_entsize != sizeof(Elf64_Sym))
        return CUDA_ERROR_INVALID_IMAGE;
    const Elf64_Sym *syms = (const Elf64_Sym *)(img + symtab->sh_offset);
    size_t nsyms = symtab->sh_size / sizeof(Elf64_Sym);
    const char *strtab = (const char *)img + sh[symtab->sh_link].sh_offset;
    int have_reserved_smem = 0;
    for (int i = 0; i < nsec; i++)
        if (!strcmp(shstr + sh[i].sh_name, ".nv.shared.reserved.0"))
            have_reserved_smem = 1;

    /* per-function registers and frame size from .nv.info */
    struct func_info *fi = calloc(nsyms ? nsyms : 1, sizeof *fi);
    if (!fi)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (int i = 0; i < nsec; i++) {
        if (strcmp(shstr + sh[i].sh_name, ".nv.info"))
            continue;
        const uint8_t *p = img + sh[i].sh_offset, *end = p + sh[i].sh_size;
        while (p + 4 <= end) {
            uint8_t fmt = p[0], attr = p[1];
            uint16_t len = (uint16_t)(p[2] | p[3] << 8);
            const uint8_t *val = p + 4;
            if (fmt != EIFMT_SVAL) { p += 4; continue; }
            if (val + len > end)
                break;
            if (len >= 8 && (attr == EIATTR_REGCOUNT || attr == EIATTR_FRAME_SIZE)) {
                uint32_t s, v;
                memcpy(&s, val, 4);
                memcpy(&v, val + 4, 4);
                if (s < nsyms) {
                    if (attr == EIATTR_REGCOUNT) fi[s].regs = (int)v;
                    else fi[s].frame = (int)v;
                }
            }
            p = val + len;
        }
    }

    int nentries = 0;
    for (size_t s = 0; s < nsyms; s++)
        if (ELF64_ST_TYPE(syms[s].st_info) == STT_FUNC && (syms[s].st_other & STO_CUDA_ENTRY))
            nentries++;

    for (size_t s = 0; s < nsyms; s++) {
        const Elf64_Sym *y = &syms[s];
        int type = ELF64_ST_TYPE(y->st_info);
        const char *name = strtab + y->st_name;
        if (!*name || y->st_shndx == SHN_UNDEF || y->st_shndx >= nsec)
            continue;
        const Elf64_Shdr *sec = &sh[y->st_shndx];
        const char *secname = shstr + sec->sh_name;
        if (type == STT_FUNC) {
            if (nentries ? !(y->st_other & STO_CUDA_ENTRY)
                         : (strncmp(secname, ".text.", 6) || strcmp(secname + 6, name)))
                continue;
            struct cu_func *f = func_new(m, name);
            if (!f) { free(fi); return CUDA_ERROR_OUT_OF_MEMORY; }
            f->num_regs = fi[s].regs ? fi[s].regs : (int)(sec->sh_info >> 24);
            if (f->num_regs <= 0)
                f->num_regs = 1;
            f->local_bytes = fi[s].frame;
            int bound = 0;
            char want[512];
            snprintf(want, sizeof want, ".nv.shared.%s", name);
            for (int i = 0; i < nsec; i++) {
                const char *sn = shstr + sh[i].sh_name;
                if (!strcmp(sn, want)) {
                    long sz = (long)sh[i].sh_size;
                    /* on sm_90 the section starts with the 1 KiB the system reserves per block */
                    if (have_reserved_smem && sz >= 1024)
                        sz -= 1024;
                    f->shared_static = (int)sz;
                } else if (!strncmp(sn, ".nv.info.", 9) && !strcmp(sn + 9, name)) {
                    const uint8_t *p = img + sh[i].sh_offset, *end = p + sh[i].sh_size;
                    int np = 0;
                    uint32_t offs[256], sizes[256];
                    while (p + 4 <= end) {
                        uint8_t fmt = p[0], attr = p[1];
                        uint16_t len = (uint16_t)(p[2] | p[3] << 8);
                        const uint8_t *val = p + 4;
                        if (fmt != EIFMT_SVAL) { p += 4; continue; }
                        if (val + len > end)
                            break;
                        if (attr == EIATTR_KPARAM_INFO && len >= 12) {
                            uint16_t ord, off;
                            uint32_t flags;
                            memcpy(&ord, val + 4, 2);
                            memcpy(&off, val + 6, 2);
                            memcpy(&flags, val + 8, 4);
                            if (ord < 256) {
                                offs[ord] = off;
                                sizes[ord] = (flags >> 18) & 0x3fff;
                                if (ord + 1 > np)
                                    np = ord + 1;
                            }
                        } else if ((attr == EIATTR_MAX_THREADS || attr == EIATTR_REQNTID) && len >= 12) {
                            uint32_t d[3];
                            memcpy(d, val, 12);
                            uint64_t prod = (uint64_t)d[0] * d[1] * d[2];
                            if (prod > 0 && (bound == 0 || prod < (uint64_t)bound))
                                bound = (int)prod;
                        }
                        p = val + len;
                    }
                    if (np > 0) {
                        f->param_off = calloc((size_t)np, sizeof *f->param_off);
                        f->param_size = calloc((size_t)np, sizeof *f->param_size);
                        if (f->param_off && f->param_size) {
                            memcpy(f->param_off, offs, (size_t)np * sizeof *offs);
                            memcpy(f->param_size, sizes, (size_t)np * sizeof *sizes);
                            f->n_params = np;
                        }
                    } else {
                        f->n_params = 0;
                    }
                }
            }
            func_finish(m, f, bound);
            if (!mod_add_func(m, f)) { free(f); free(fi); return CUDA_ERROR_OUT_OF_MEMORY; }
        } else if (type == STT_OBJECT) {
            if (strncmp(secname, ".nv.global", 10) && strncmp(secname, ".nv.constant", 12))
                continue;
            if (!strncmp(secname, ".nv.constant0", 13))
                continue;
            const void *init = NULL;
            uint64_t off = y->st_value - (sec->sh_addr <= y->st_value ? sec->sh_addr : 0);
            if (sec->sh_type == SHT_PROGBITS && off + y->st_size <= sec->sh_size)
                init = img + sec->sh_offset + off;
            if (!mod_add_global(m, name, strlen(name), (size_t)y->st_size, init)) {
                free(fi);
                return CUDA_ERROR_OUT_OF_MEMORY;
            }
        }
    }
    free(fi);
    return CUDA_SUCCESS;
}

static size_t elf_extent(const uint8_t *img)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
    size_t end = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(img + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum; i++)
        if (sh[i].sh_type != SHT_NOBITS && sh[i].sh_offset + sh[i].sh_size > end)
            end = sh[i].sh_offset + sh[i].sh_size;
    return end;
}

/* ---------------------------------------------------------------- PTX */
static int ptx_type_size(const char *t)
{
    static const struct { const char *n; int s; } types[] = {
        {".b8", 1}, {".u8", 1}, {".s8", 1}, {".pred", 1}, {".b16", 2}, {".u16", 2}, {".s16", 2}, {".f16", 2},
        {".bf16", 2}, {".b32", 4}, {".u32", 4}, {".s32", 4}, {".f32", 4}, {".f16x2", 4}, {".bf16x2", 4},
        {".b64", 8}, {".u64", 8}, {".s64", 8}, {".f64", 8}, {".b128", 16},
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(t, types[i].n))
            return types[i].s;
    return 0;
}

static const char *skip_ws(const char *p)
{
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
            p++;
        if (p[0] == '/' && p[1] == '/') {
            while (*p && *p != '\n')
                p++;
        } else if (p[0] == '/' && p[1] == '*') {
            const char *e = strstr(p + 2, "*/");
            p = e ? e + 2 : p + strlen(p);
        } else {
            return p;
        }
    }
}

static size_t token(const char *p, char *out, size_t cap)
{
    size_t n = 0;
    while (p[n] && !strchr(" \t\r\n,;()[]{}=", p[n]))
        n++;
    size_t c = n < cap - 1 ? n : cap - 1;
    memcpy(out, p, c);
    out[c] = 0;
    return n;
}

static CUresult parse_ptx(struct cu_module *m, const char *text)
{
    int depth = 0;
    const char *p = text;
    m->sm = 0;
    struct cu_func *pending = NULL;   /* kernel whose directives (.maxntid) are being read */
    int pending_bound = 0;
    while (*(p = skip_ws(p))) {
        if (*p == '{') { depth++; p++; continue; }
        if (*p == '}') {
            if (--depth == 0 && pending) {
                func_finish(m, pending, pending_bound);
                if (!mod_add_func(m, pending)) { free(pending); return CUDA_ERROR_OUT_OF_MEMORY; }
                pending = NULL;
            }
            p++;
            continue;
        }
        char tok[256];
        size_t n = token(p, tok, sizeof tok);
        if (n == 0) { p++; continue; }
        if (depth == 0) {
            if (!strcmp(tok, ".target")) {
                char t[64];
                const char *q = skip_ws(p + n);
                token(q, t, sizeof t);
                if (!strncmp(t, "sm_", 3))
                    m->sm = atoi(t + 3);
            } else if (!strcmp(tok, ".entry")) {
                char name[256];
                const char *q = skip_ws(p + n);
                size_t k = token(q, name, sizeof name);
                if (pending) {         /* a declaration without body (prototype) */
                    free(pending);
                    pending = NULL;
                }
                if (k) {
                    pending = func_new(m, name);
                    if (!pending)
                        return CUDA_ERROR_OUT_OF_MEMORY;
                    pending->num_regs = 32;
                    pending_bound = 0;
                    /* count the parameters */
                    const char *lp = strchr(q, '('), *rp = lp ? strchr(lp, ')') : NULL;
                    if (lp && rp) {
                        int np = 0;
                        for (const char *r = lp; r < rp; r++)
                            if (!strncmp(r, ".param", 6))
                                np++;
                        pending->n_params = np;
                    }
                }
                p = q + k;
                continue;
            } else if ((!strcmp(tok, ".maxntid") || !strcmp(tok, ".reqntid")) && pending) {
                const char *q = skip_ws(p + n);
                long prod = 1;
                for (int i = 0; i < 3; i++) {
                    char *e;
                    long v = strtol(q, &e, 10);
                    if (e == q)
                        break;
                    prod *= v;
                    q = skip_ws(e);
                    if (*q == ',') q = skip_ws(q + 1);
                }
                if (prod > 0 && (pending_bound == 0 || prod < pending_bound))
                    pending_bound = (int)prod;
            } else if (!strcmp(tok, ".global") || !strcmp(tok, ".const")) {
                /* .global [.align N] .type NAME[dims] [= init]; */
                const char *q = skip_ws(p + n);
                int esize = 0;
                char t[256];
                for (int guard = 0; guard < 8; guard++) {
                    size_t k = token(q, t, sizeof t);
                    if (!k) break;
                    if (!strcmp(t, ".align")) {
                        q = skip_ws(q + k);
                        q += token(q, t, sizeof t);
                        q = skip_ws(q);
                        continue;
                    }
                    if (t[0] == '.') {
                        int s = ptx_type_size(t);
                        if (s) esize = s;
                        q = skip_ws(q + k);
                        continue;
                    }
                    /* the name */
                    const char *nm = q;
                    size_t nlen = k;
                    q = skip_ws(q + k);
                    size_t count = 1;
                    while (*q == '[') {
                        char *e;
                        unsigned long long d = strtoull(q + 1, &e, 10);
                        count *= d ? d : 1;
                        q = strchr(q, ']');
                        q = q ? skip_ws(q + 1) : q;
                        if (!q) break;
                    }
                    if (esize && nlen && !mod_add_global(m, nm, nlen, count * (size_t)esize, NULL))
                        return CUDA_ERROR_OUT_OF_MEMORY;
                    break;
                }
            }
        }
        p += n;
    }
    if (pending)
        free(pending);
    if (m->sm == 0)
        m->sm = 52;
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- fatbin */
struct fatbin_header { uint32_t magic; uint16_t version, header_size; uint64_t fat_size; };
struct fatbin_entry {
    uint16_t kind;               /* 1 PTX, 2 cubin */
    uint16_t unknown;
    uint32_t header_size;
    uint64_t size;
    uint32_t compressed_size;
    uint32_t unknown2;
    uint16_t minor, major;
    uint32_t arch;
    uint32_t name_off, name_len;
    uint64_t flags;
    uint64_t zero;
    uint64_t uncompressed_size;
};
#define FATBIN_FLAG_COMPRESSED 0x2000
#define FATBIN_FLAG_COMPRESSED_ZSTD 0x8000

static CUresult parse_fatbin(struct cu_module *m, const uint8_t *img)
{
    const struct fatbin_header *h = (const struct fatbin_header *)img;
    const uint8_t *p = img + h->header_size, *end = p + h->fat_size;
    const tw_gpu_spec *spec = tw_device_spec(m->device);
    int dev_sm = spec ? spec->cc_major * 10 + spec->cc_minor : 90;
    const struct fatbin_entry *best_elf = NULL, *best_ptx = NULL;
    while (p + sizeof(struct fatbin_entry) <= end) {
        const struct fatbin_entry *e = (const struct fatbin_entry *)p;
        if (e->header_size < 16 || p + e->header_size + e->size > end)
            break;
        int arch = (int)e->arch;
        if (e->kind == 2 && arch / 10 == dev_sm / 10 && arch <= dev_sm &&
            (!best_elf || (int)best_elf->arch < arch))
            best_elf = e;
        if (e->kind == 1 && arch <= dev_sm && (!best_ptx || (int)best_ptx->arch < arch))
            best_ptx = e;
        p += e->header_size + e->size;
    }
    const struct fatbin_entry *use = best_elf ? best_elf : best_ptx;
    if (!use)
        return CUDA_ERROR_NO_BINARY_FOR_GPU;
    m->sm = (int)use->arch;
    const uint8_t *payload = (const uint8_t *)use + use->header_size;
    if ((use->flags & (FATBIN_FLAG_COMPRESSED | FATBIN_FLAG_COMPRESSED_ZSTD)) || use->compressed_size) {
        m->opaque = 1;
        TW_DEBUG("cuda: fatbin entry for sm_%d is compressed: module kernels resolve by name only", m->sm);
        return CUDA_SUCCESS;
    }
    if (use->kind == 2)
        return parse_cubin(m, payload, (size_t)use->size);
    /* PTX payloads are NUL-padded text */
    char *text = strndup((const char *)payload, (size_t)use->size);
    if (!text)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = parse_ptx(m, text);
    free(text);
    return r;
}

/* ---------------------------------------------------------------- images produced by cuLinkComplete */
#define LINK_MAGIC "TWLINK01"
struct link_state { uint32_t magic; uint8_t *buf; size_t len, cap; uint32_t count; };
#define LINK_STATE_MAGIC 0x43754c6bu

static CUresult parse_any(struct cu_module *m, const void *image, size_t size, const char **kind)
{
    const uint8_t *img = image;
    uint32_t magic;
    memcpy(&magic, img, 4);
    if (magic == FATBIN_WRAPPER_MAGIC) {
        const void *inner;
        memcpy(&inner, img + 8, sizeof inner);
        if (!inner)
            return CUDA_ERROR_INVALID_IMAGE;
        img = inner;
        memcpy(&magic, img, 4);
        size = 0;
    }
    if (!memcmp(img, ELFMAG, SELFMAG)) {
        *kind = "cubin";
        return parse_cubin(m, img, size ? size : elf_extent(img));
    }
    if (magic == FATBIN_MAGIC) {
        *kind = "fatbin";
        return parse_fatbin(m, img);
    }
    if (!memcmp(img, LINK_MAGIC, 8)) {
        /* the parts given to the linker: one module holding all of them */
        *kind = "linked";
        uint32_t count;
        memcpy(&count, img + 8, 4);
        const uint8_t *p = img + 12;
        for (uint32_t i = 0; i < count; i++) {
            uint64_t len;
            memcpy(&len, p, 8);
            const char *k;
            CUresult r = parse_any(m, p + 8, (size_t)len, &k);
            if (r != CUDA_SUCCESS)
                return r;
            p += 8 + ((len + 7) & ~7ull);
        }
        return CUDA_SUCCESS;
    }
    /* PTX text, NUL-terminated */
    const char *t = (const char *)img;
    if (!strstr(t, ".version") && !strstr(t, ".entry") && !strstr(t, ".target"))
        return CUDA_ERROR_INVALID_IMAGE;
    *kind = "ptx";
    return parse_ptx(m, t);
}

/* ---------------------------------------------------------------- load / unload */
static void mod_free(struct cu_module *m)
{
    for (int i = 0; i < m->nfuncs; i++) {
        struct cu_func *f = m->funcs[i];
        f->magic = 0;
        free(f->param_off);
        free(f->param_size);
        free(f);
    }
    free(m->funcs);
    for (int i = 0; i < m->nglobals; i++) {
        struct cu_global *g = &m->globals[i];
        if (g->dptr)
            tw_mem_free((void *)g->dptr);
        free(g->name);
        free(g->init);
    }
    free(m->globals);
    pthread_mutex_destroy(&m->lock);
    m->magic = 0;
    free(m);
}

static CUresult load_image(struct cu_module **out, const void *image, size_t size, int is_library)
{
    cu_enter();
    if (!out || !image)
        return CUDA_ERROR_INVALID_VALUE;
    struct cu_module *m = calloc(1, sizeof *m);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    m->magic = CU_MOD_MAGIC;
    m->is_library = is_library;
    m->device = cu_current_device();
    pthread_mutex_init(&m->lock, NULL);

    const char *kind = "image";
    CUresult r = parse_any(m, image, size, &kind);
    if (r != CUDA_SUCCESS) {
        mod_free(m);
        TW_DEBUG("cuda: module load (%s) -> %s", kind, cu_result_name(r));
        return r;
    }
    pthread_mutex_lock(&mod_lock);
    m->next = modules;
    modules = m;
    pthread_mutex_unlock(&mod_lock);
    *out = m;
    TW_DEBUG("cuda: loaded %s module %p: %d kernels, %d globals%s", kind, (void *)m, m->nfuncs, m->nglobals,
             m->opaque ? " (opaque)" : "");
    return CUDA_SUCCESS;
}

static CUresult load_file(struct cu_module **out, const char *fname, int is_library)
{
    cu_enter();
    if (!out || !fname)
        return CUDA_ERROR_INVALID_VALUE;
    int fd = open(fname, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return CUDA_ERROR_FILE_NOT_FOUND;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size <= 0) {
        close(fd);
        return CUDA_ERROR_INVALID_IMAGE;
    }
    uint8_t *buf = malloc((size_t)st.st_size + 1);
    if (!buf) {
        close(fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    buf[got] = 0;
    CUresult r = got >= 4 ? load_image(out, buf, got, is_library) : CUDA_ERROR_INVALID_IMAGE;
    free(buf);
    return r;
}

/* JIT options that return values: logs are empty, the wall time is zero. */
static void jit_outputs(unsigned int n, const CUjit_option *opts, void **vals)
{
    if (!opts || !vals)
        return;
    for (unsigned i = 0; i < n; i++) {
        switch (opts[i]) {
        case CU_JIT_INFO_LOG_BUFFER:
        case CU_JIT_ERROR_LOG_BUFFER:
            if (vals[i])
                *(char *)vals[i] = 0;
            break;
        case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES:
        case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
            vals[i] = (void *)(uintptr_t)0;
            break;
        case CU_JIT_WALL_TIME: {
            float z = 0.0f;
            memcpy(&vals[i], &z, sizeof z);
            break;
        }
        default:
            break;
        }
    }
}

TW_EXPORT CUresult cuModuleLoad(CUmodule *module, const char *fname) { return load_file(module, fname, 0); }

TW_EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image) { return load_image(module, image, 0, 0); }

TW_EXPORT CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                                      CUjit_option *options, void **optionValues)
{
    if (numOptions && (!options || !optionValues))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = load_image(module, image, 0, 0);
    if (r == CUDA_SUCCESS)
        jit_outputs(numOptions, options, optionValues);
    return r;
}

TW_EXPORT CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
    return load_image(module, fatCubin, 0, 0);
}

static CUresult unload(struct cu_module *m, int is_library)
{
    cu_enter();
    if (!mod_valid(m) || m->is_library != is_library)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&mod_lock);
    for (struct cu_module **pp = &modules; *pp; pp = &(*pp)->next)
        if (*pp == m) { *pp = m->next; break; }
    pthread_mutex_unlock(&mod_lock);
    mod_free(m);
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuModuleUnload(CUmodule hmod) { return unload(hmod, 0); }

static CUresult get_function(struct cu_func **out, struct cu_module *m, const char *name)
{
    cu_enter();
    if (!out || !name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!mod_valid(m))
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult r = CUDA_ERROR_NOT_FOUND;
    pthread_mutex_lock(&m->lock);
    for (int i = 0; i < m->nfuncs; i++)
        if (!strcmp(m->funcs[i]->name, name)) {
            *out = m->funcs[i];
            r = CUDA_SUCCESS;
            break;
        }
    if (r != CUDA_SUCCESS && m->opaque) {
        struct cu_func *f = func_new(m, name);
        if (!f) {
            r = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            func_finish(m, f, 0);
            if (mod_add_func(m, f)) {
                *out = f;
                r = CUDA_SUCCESS;
            } else {
                free(f);
                r = CUDA_ERROR_OUT_OF_MEMORY;
            }
        }
    }
    pthread_mutex_unlock(&m->lock);
    TW_DEBUG("cuda: get function %s in %p -> %s", name, (void *)m, cu_result_name(r));
    return r;
}

TW_EXPORT CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    return get_function(hfunc, hmod, name);
}

static CUresult get_global(CUdeviceptr *dptr, size_t *bytes, struct cu_module *m, const char *name)
{
    cu_enter();
    if (!name || (!dptr && !bytes))
        return CUDA_ERROR_INVALID_VALUE;
    if (!mod_valid(m))
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult r = CUDA_ERROR_NOT_FOUND;
    pthread_mutex_lock(&m->lock);
    for (int i = 0; i < m->nglobals; i++) {
        struct cu_global *g = &m->globals[i];
        if (strcmp(g->name, name))
            continue;
        r = CUDA_SUCCESS;
        if (!g->dptr) {
            void *p = NULL;
            tw_err e = tw_mem_alloc(m->device, g->size ? g->size : 1, &p);
            if (e != TW_OK) {
                r = cu_err(e);
                break;
            }
            if (g->init)
                tw_mem_copy_now(p, g->init, g->size);
            else
                tw_mem_set_now(p, 0, g->size ? g->size : 1);
            g->dptr = (uintptr_t)p;
        }
        if (dptr)
            *dptr = g->dptr;
        if (bytes)
            *bytes = g->size;
        break;
    }
    pthread_mutex_unlock(&m->lock);
    return r;
}

TW_EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name)
{
    return get_global(dptr, bytes, hmod, name);
}

/* pre-3.2 ABI: 32-bit pointer and size */
TW_EXPORT CUresult cuModuleGetGlobal(CUdeviceptr_v1 *dptr, unsigned int *bytes, CUmodule hmod, const char *name)
{
    CUdeviceptr d;
    size_t b;
    CUresult r = get_global(dptr ? &d : NULL, bytes ? &b : NULL, hmod, name);
    if (r != CUDA_SUCCESS)
        return r;
    if (dptr) {
        if (d > 0xffffffffull)
            return CUDA_ERROR_OUT_OF_MEMORY;
        *dptr = (CUdeviceptr_v1)d;
    }
    if (bytes)
        *bytes = (unsigned)b;
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode *mode)
{
    cu_enter();
    if (!mode)
        return CUDA_ERROR_INVALID_VALUE;
    *mode = CU_MODULE_LAZY_LOADING;   /* the default since CUDA 12.2 */
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuModuleGetFunctionCount(unsigned int *count, CUmodule mod)
{
    cu_enter();
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    if (!mod_valid(mod))
        return CUDA_ERROR_INVALID_HANDLE;
    *count = (unsigned)mod->nfuncs;
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuModuleEnumerateFunctions(CUfunction *functions, unsigned int numFunctions, CUmodule mod)
{
    cu_enter();
    if (!functions)
        return CUDA_ERROR_INVALID_VALUE;
    if (!mod_valid(mod))
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&mod->lock);
    for (unsigned i = 0; i < numFunctions && (int)i < mod->nfuncs; i++)
        functions[i] = mod->funcs[i];
    pthread_mutex_unlock(&mod->lock);
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- libraries (context-independent modules) */
static CUresult lib_load_checks(CUlibrary *library, unsigned int numJitOptions, CUjit_option *jitOptions,
                                void **jitOptionsValues, unsigned int numLibraryOptions,
                                CUlibraryOption *libraryOptions, void **libraryOptionValues)
{
    if (!library)
        return CUDA_ERROR_INVALID_VALUE;
    if (numJitOptions && (!jitOptions || !jitOptionsValues))
        return CUDA_ERROR_INVALID_VALUE;
    if (numLibraryOptions && (!libraryOptions || !libraryOptionValues))
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                                     void **jitOptionsValues, unsigned int numJitOptions,
                                     CUlibraryOption *libraryOptions, void **libraryOptionValues,
                                     unsigned int numLibraryOptions)
{
    CUresult r = lib_load_checks(library, numJitOptions, jitOptions, jitOptionsValues, numLibraryOptions,
                                 libraryOptions, libraryOptionValues);
    if (r == CUDA_SUCCESS)
        r = load_image(library, code, 0, 1);
    if (r == CUDA_SUCCESS)
        jit_outputs(numJitOptions, jitOptions, jitOptionsValues);
    return r;
}

TW_EXPORT CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, CUjit_option *jitOptions,
                                         void **jitOptionsValues, unsigned int numJitOptions,
                                         CUlibraryOption *libraryOptions, void **libraryOptionValues,
                                         unsigned int numLibraryOptions)
{
    CUresult r = lib_load_checks(library, numJitOptions, jitOptions, jitOptionsValues, numLibraryOptions,
                                 libraryOptions, libraryOptionValues);
    if (r == CUDA_SUCCESS)
        r = load_file(library, fileName, 1);
    if (r == CUDA_SUCCESS)
        jit_outputs(numJitOptions, jitOptions, jitOptionsValues);
    return r;
}

TW_EXPORT CUresult cuLibraryUnload(CUlibrary library) { return unload(library, 1); }

TW_EXPORT CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
    if (library && mod_valid(library) && !library->is_library)
        return CUDA_ERROR_INVALID_HANDLE;
    return get_function(pKernel, library, name);
}

TW_EXPORT CUresult cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
    cu_enter();
    if (!pMod)
        return CUDA_ERROR_INVALID_VALUE;
    if (!mod_valid(library) || !library->is_library)
        return CUDA_ERROR_INVALID_HANDLE;
    *pMod = library;
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name)
{
    if (library && mod_valid(library) && !library->is_library)
        return CUDA_ERROR_INVALID_HANDLE;
    return get_global(dptr, bytes, library, name);
}

TW_EXPORT CUresult cuLibraryGetKernelCount(unsigned int *count, CUlibrary lib)
{
    return cuModuleGetFunctionCount(count, lib);
}

TW_EXPORT CUresult cuLibraryEnumerateKernels(CUkernel *kernels, unsigned int numKernels, CUlibrary lib)
{
    return cuModuleEnumerateFunctions(kernels, numKernels, lib);
}

TW_EXPORT CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
    cu_enter();
    if (!pFunc)
        return CUDA_ERROR_INVALID_VALUE;
    struct cu_func tmp;
    if (!cu_func_get(kernel, &tmp))
        return CUDA_ERROR_INVALID_HANDLE;
    *pFunc = kernel;   /* a runtime kernel handle is also its function handle */
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuKernelGetLibrary(CUlibrary *pLib, CUkernel kernel)
{
    cu_enter();
    if (!pLib)
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_func_ok(kernel) || !kernel->mod->is_library)
        return CUDA_ERROR_INVALID_HANDLE;
    *pLib = kernel->mod;
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- function attributes */
struct cu_func *cu_func_slow(const void *h, struct cu_func *tmp)
{
    if (!h || !tw_kernel_valid(h))
        return NULL;
    const tw_kernel *k = h;
    memset(tmp, 0, sizeof *tmp);
    tmp->magic = CU_FUNC_MAGIC;
    tmp->kernel = (tw_kernel *)k;
    tmp->name = k->name;
    tmp->num_regs = k->num_regs > 0 ? k->num_regs : 32;
    tmp->local_bytes = k->local_bytes;
    tmp->shared_static = k->shared_bytes;
    tmp->const_bytes = k->const_bytes;
    tmp->max_threads = k->max_threads > 0 ? k->max_threads : max_threads_for(cu_current_device(), tmp->num_regs, 0);
    tmp->max_dyn_shared = k->max_dyn_shared > 0 ? k->max_dyn_shared : 49152 - k->shared_bytes;
    if (tmp->max_dyn_shared < 0)
        tmp->max_dyn_shared = 0;
    tmp->carveout = -1;
    tmp->n_params = k->n_params;
    const tw_gpu_spec *spec = tw_device_spec(cu_current_device());
    tmp->ptx_version = tmp->binary_version = spec ? spec->cc_major * 10 + spec->cc_minor : 90;
    return tmp;
}

static CUresult func_get_attr(int *pi, CUfunction_attribute attrib, const void *h)
{
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    struct cu_func tmp;
    const struct cu_func *f = cu_func_get(h, &tmp);
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = f->max_threads; break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *pi = f->shared_static; break;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *pi = f->const_bytes; break;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *pi = f->local_bytes; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = f->num_regs; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: *pi = f->ptx_version; break;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = f->binary_version; break;
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA: *pi = 0; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *pi = f->max_dyn_shared; break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *pi = f->carveout; break;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET: *pi = f->cluster_must_be_set; break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH: *pi = f->req_cluster[0]; break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT: *pi = f->req_cluster[1]; break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH: *pi = f->req_cluster[2]; break;
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED: *pi = f->non_portable_cluster; break;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE: *pi = f->cluster_sched; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

/* On a runtime kernel (a view, mod == NULL) only the dynamic shared memory opt-in persists: it is the core's. */
static CUresult func_set_attr(void *h, CUfunction_attribute attrib, int value)
{
    struct cu_func tmp;
    struct cu_func *f = cu_func_get(h, &tmp);
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: {
        int optin = dev_attr(f->mod ? f->mod->device : cu_current_device(), CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 232448);
        if (value < 0 || value + f->shared_static > optin)
            return CUDA_ERROR_INVALID_VALUE;
        f->max_dyn_shared = value;
        if (!f->mod || f->kernel->max_dyn_shared < value)
            f->kernel->max_dyn_shared = value;
        break;
    }
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        if (value < -1 || value > 100)
            return CUDA_ERROR_INVALID_VALUE;
        f->carveout = value;
        break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
        if (value < 0 || value > 16)
            return CUDA_ERROR_INVALID_VALUE;
        f->req_cluster[attrib - CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH] = value;
        break;
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
        if (value != 0 && value != 1)
            return CUDA_ERROR_INVALID_VALUE;
        f->non_portable_cluster = value;
        break;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
        if (value < 0 || value > 2)
            return CUDA_ERROR_INVALID_VALUE;
        f->cluster_sched = value;
        break;
    default:
        return CUDA_ERROR_INVALID_VALUE;   /* read-only attributes */
    }
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
    cu_enter();
    return func_get_attr(pi, attrib, hfunc);
}

TW_EXPORT CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
    cu_enter();
    return func_set_attr(hfunc, attrib, value);
}

TW_EXPORT CUresult cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev)
{
    cu_enter();
    if (!cu_dev_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    return func_get_attr(pi, attrib, kernel);
}

TW_EXPORT CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev)
{
    cu_enter();
    if (!cu_dev_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    return func_set_attr(kernel, attrib, val);
}

TW_EXPORT CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)
{
    cu_enter();
    struct cu_func tmp;
    hfunc = cu_func_get(hfunc, &tmp);
    if (!hfunc)
        return CUDA_ERROR_INVALID_HANDLE;
    if ((unsigned)config > CU_FUNC_CACHE_PREFER_EQUAL)
        return CUDA_ERROR_INVALID_VALUE;
    hfunc->cache_config = config;
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config, CUdevice dev)
{
    if (!cu_dev_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    return cuFuncSetCacheConfig(kernel, config);
}

TW_EXPORT CUresult cuFuncGetName(const char **name, CUfunction hfunc)
{
    cu_enter();
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    struct cu_func tmp;
    const struct cu_func *f = cu_func_get(hfunc, &tmp);
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    *name = f->name;
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuKernelGetName(const char **name, CUkernel hfunc) { return cuFuncGetName(name, hfunc); }

static CUresult param_info(const void *h, size_t idx, size_t *off, size_t *size)
{
    cu_enter();
    if (!off && !size)
        return CUDA_ERROR_INVALID_VALUE;
    struct cu_func tmp;
    const struct cu_func *f = cu_func_get(h, &tmp);
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    if (f->n_params < 0 || !f->param_off)
        return f->n_params == 0 || (f->n_params > 0 && idx >= (size_t)f->n_params) ? CUDA_ERROR_INVALID_VALUE
                                                                                   : CUDA_ERROR_NOT_SUPPORTED;
    if (idx >= (size_t)f->n_params)
        return CUDA_ERROR_INVALID_VALUE;
    if (off)
        *off = f->param_off[idx];
    if (size)
        *size = f->param_size[idx];
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset, size_t *paramSize)
{
    return param_info(func, paramIndex, paramOffset, paramSize);
}

TW_EXPORT CUresult cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t *paramOffset, size_t *paramSize)
{
    return param_info(kernel, paramIndex, paramOffset, paramSize);
}

TW_EXPORT CUresult cuFuncGetModule(CUmodule *hmod, CUfunction hfunc)
{
    cu_enter();
    if (!hmod)
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_func_ok(hfunc))
        return CUDA_ERROR_INVALID_HANDLE;
    *hmod = hfunc->mod;
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuFuncIsLoaded(CUfunctionLoadingState *state, CUfunction function)
{
    cu_enter();
    if (!state)
        return CUDA_ERROR_INVALID_VALUE;
    struct cu_func tmp;
    if (!cu_func_get(function, &tmp))
        return CUDA_ERROR_INVALID_HANDLE;
    *state = CU_FUNCTION_LOADING_STATE_LOADED;
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuFuncLoad(CUfunction function)
{
    cu_enter();
    struct cu_func tmp;
    return cu_func_get(function, &tmp) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* ---------------------------------------------------------------- linker */
typedef struct link_state *CUlinkState;
enum { CU_JIT_INPUT_CUBIN = 0, CU_JIT_INPUT_PTX = 1, CU_JIT_INPUT_FATBINARY = 2, CU_JIT_INPUT_OBJECT = 3,
       CU_JIT_INPUT_LIBRARY = 4, CU_JIT_INPUT_NVVM = 5 };

static int link_append(struct link_state *st, const void *data, size_t len)
{
    size_t need = st->len + 8 + ((len + 7) & ~(size_t)7);
    if (need > st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 4096;
        while (cap < need)
            cap *= 2;
        uint8_t *n = realloc(st->buf, cap);
        if (!n)
            return 0;
        st->buf = n;
        st->cap = cap;
    }
    uint64_t l = len;
    memcpy(st->buf + st->len, &l, 8);
    memcpy(st->buf + st->len + 8, data, len);
    memset(st->buf + st->len + 8 + len, 0, ((len + 7) & ~(size_t)7) - len);
    st->len = need;
    st->count++;
    memcpy(st->buf + 8, &st->count, 4);
    return 1;
}

static CUresult link_create(unsigned int numOptions, CUjit_option *options, void **optionValues, CUlinkState *out)
{
    cu_enter();
    if (!out || (numOptions && (!options || !optionValues)))
        return CUDA_ERROR_INVALID_VALUE;
    struct link_state *st = calloc(1, sizeof *st);
    if (!st)
        return CUDA_ERROR_OUT_OF_MEMORY;
    st->magic = LINK_STATE_MAGIC;
    st->cap = 4096;
    st->buf = malloc(st->cap);
    if (!st->buf) {
        free(st);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memcpy(st->buf, LINK_MAGIC, 8);
    memset(st->buf + 8, 0, 4);
    st->len = 12;
    jit_outputs(numOptions, options, optionValues);
    *out = st;
    return CUDA_SUCCESS;
}
TW_EXPORT CUresult cuLinkCreate(unsigned int n, CUjit_option *o, void **v, CUlinkState *out) { return link_create(n, o, v, out); }
TW_EXPORT CUresult cuLinkCreate_v2(unsigned int n, CUjit_option *o, void **v, CUlinkState *out) { return link_create(n, o, v, out); }

static CUresult link_add(CUlinkState st, int type, const void *data, size_t size)
{
    if (!st || st->magic != LINK_STATE_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!data || size == 0 || type < CU_JIT_INPUT_CUBIN || type > CU_JIT_INPUT_NVVM)
        return CUDA_ERROR_INVALID_VALUE;
    if (type == CU_JIT_INPUT_LIBRARY || type == CU_JIT_INPUT_NVVM)
        return CUDA_SUCCESS;
    if (type == CU_JIT_INPUT_PTX) {
        /* keep PTX NUL-terminated */
        char *t = malloc(size + 1);
        if (!t)
            return CUDA_ERROR_OUT_OF_MEMORY;
        memcpy(t, data, size);
        t[size] = 0;
        int ok = link_append(st, t, size + 1);
        free(t);
        return ok ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    }
    return link_append(st, data, size) ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult link_add_data(CUlinkState st, int type, void *data, size_t size, const char *name,
                              unsigned int n, CUjit_option *o, void **v)
{
    (void)name;
    cu_enter();
    if (n && (!o || !v))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = link_add(st, type, data, size);
    if (r == CUDA_SUCCESS)
        jit_outputs(n, o, v);
    return r;
}
TW_EXPORT CUresult cuLinkAddData(CUlinkState st, int type, void *data, size_t size, const char *name, unsigned int n,
                                 CUjit_option *o, void **v)
{
    return link_add_data(st, type, data, size, name, n, o, v);
}
TW_EXPORT CUresult cuLinkAddData_v2(CUlinkState st, int type, void *data, size_t size, const char *name,
                                    unsigned int n, CUjit_option *o, void **v)
{
    return link_add_data(st, type, data, size, name, n, o, v);
}

static CUresult link_add_file(CUlinkState st, int type, const char *path, unsigned int n, CUjit_option *o, void **v)
{
    cu_enter();
    if (!path || (n && (!o || !v)))
        return CUDA_ERROR_INVALID_VALUE;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return CUDA_ERROR_FILE_NOT_FOUND;
    struct stat sb;
    if (fstat(fd, &sb) != 0 || sb.st_size <= 0) {
        close(fd);
        return CUDA_ERROR_INVALID_IMAGE;
    }
    uint8_t *buf = malloc((size_t)sb.st_size);
    size_t got = 0;
    while (buf && got < (size_t)sb.st_size) {
        ssize_t k = read(fd, buf + got, (size_t)sb.st_size - got);
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    close(fd);
    if (!buf)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = link_add(st, type, buf, got);
    free(buf);
    if (r == CUDA_SUCCESS)
        jit_outputs(n, o, v);
    return r;
}
TW_EXPORT CUresult cuLinkAddFile(CUlinkState st, int type, const char *path, unsigned int n, CUjit_option *o, void **v)
{
    return link_add_file(st, type, path, n, o, v);
}
TW_EXPORT CUresult cuLinkAddFile_v2(CUlinkState st, int type, const char *path, unsigned int n, CUjit_option *o,
                                    void **v)
{
    return link_add_file(st, type, path, n, o, v);
}

/* The image stays owned by the link state until cuLinkDestroy, as with the real driver. */
TW_EXPORT CUresult cuLinkComplete(CUlinkState st, void **cubinOut, size_t *sizeOut)
{
    cu_enter();
    if (!st || st->magic != LINK_STATE_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!cubinOut)
        return CUDA_ERROR_INVALID_VALUE;
    if (st->count == 0)
        return CUDA_ERROR_INVALID_IMAGE;
    *cubinOut = st->buf;
    if (sizeOut)
        *sizeOut = st->len;
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuLinkDestroy(CUlinkState st)
{
    cu_enter();
    if (!st || st->magic != LINK_STATE_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    st->magic = 0;
    free(st->buf);
    free(st);
    return CUDA_SUCCESS;
}
