/* Kernel identities: one tw_kernel per device function name, shared by every API that names it
 * (registration by the runtime, modules loaded through the driver, the libraries' own launches). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

#define KSLOTS_INIT 4096
static tw_kernel **slots;
static size_t nslots, nkernels;
static pthread_mutex_t klock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;   /* FNV-1a */
    while (*s) { h ^= (unsigned char)*s++; h *= 1099511628211ull; }
    return h;
}

static void grow(void) {
    size_t nn = nslots ? nslots * 2 : KSLOTS_INIT;
    tw_kernel **ns = calloc(nn, sizeof *ns);
    if (!ns) return;
    for (size_t i = 0; i < nslots; i++) {
        if (!slots[i]) continue;
        size_t j = hash_str(slots[i]->name) & (nn - 1);
        while (ns[j]) j = (j + 1) & (nn - 1);
        ns[j] = slots[i];
    }
    free(slots);
    slots = ns;
    nslots = nn;
}

/* The demangled name, as CUPTI and the recorder (integrations/record.py) report kernels: profiles are keyed
 * by it. libstdc++'s demangler, when the process has it (every PyTorch process does); else the raw name. */
static const char *demangle(const char *name) {
    if (name[0] != '_' || name[1] != 'Z') return name;
    static char *(*cxa_demangle)(const char *, char *, size_t *, int *);
    static int tried;
    if (!tried) {
        /* PyTorch loads libstdc++ in a local scope: open it by name (already mapped, or mapped now) */
        tried = 1;
        void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
        if (h) cxa_demangle = (char *(*)(const char *, char *, size_t *, int *))dlsym(h, "__cxa_demangle");
    }
    if (!cxa_demangle) return name;
    int status = -1;
    char *d = cxa_demangle(name, NULL, NULL, &status);
    return status == 0 && d ? d : name;
}

tw_kernel *tw_kernel_intern(const char *name) {
    if (!name) name = "<unnamed kernel>";
    pthread_mutex_lock(&klock);
    if (nkernels * 2 >= nslots) grow();
    size_t j = hash_str(name) & (nslots - 1);
    while (slots[j] && strcmp(slots[j]->name, name)) j = (j + 1) & (nslots - 1);
    tw_kernel *k = slots[j];
    if (!k) {
        k = calloc(1, sizeof *k);
        if (k) {
            k->name = strdup(name);
            k->pretty = demangle(k->name);
            k->id = (uint32_t)++nkernels;
            k->n_params = -1;
            k->max_threads = 1024;
            k->num_regs = 32;
            slots[j] = k;
        }
    }
    pthread_mutex_unlock(&klock);
    return k;
}

/* is p a tw_kernel this table handed out (kernel handles of every API are tw_kernel pointers) */
int tw_kernel_valid(const void *p) {
    int found = 0;
    pthread_mutex_lock(&klock);
    for (size_t i = 0; i < nslots && !found; i++) found = slots[i] == p;
    pthread_mutex_unlock(&klock);
    return found;
}

/* ---------------------------------------------------------------- row shapes from launch arguments */
enum { ROW_NONE = 1, ROW_LAYER_NORM, ROW_REDUCE, ROW_CUTLASS_GEMM, ROW_INDUCTOR_POINTWISE, ROW_INDUCTOR_REDUCTION,
       ROW_ELEMENTWISE, ROW_SOFTMAX, ROW_CAST };

/* The cudaDataType_t of the first element type a CUTLASS kernel's name spells (its A operand's, then its
 * output's after that point), -1 when none of these. */
static int cutlass_type(const char *p, const char **after) {
    static const struct { const char *name; int type; } types[] = {
        {"cutlass::float_e4m3_t", 28}, {"cutlass::float_e5m2_t", 29}, {"cutlass::bfloat16_t", 14},
        {"cutlass::half_t", 2}, {"signed char", 3}, {"float", 0},   /* int8_t demangles to signed char */
    };
    const char *best = NULL;
    int type = -1;
    size_t len = 0;
    for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
        const char *q = strstr(p, types[i].name);
        if (q && (!best || q < best)) { best = q; type = types[i].type; len = strlen(types[i].name); }
    }
    if (after) *after = best ? best + len : p;
    return type;
}

/* The size of the first element type named in p before `until` (NULL: anywhere), 0 when none is. */
static int first_type_size(const char *p, const char *until) {
    static const struct { const char *t; int size; } types[] = {
        {"c10::BFloat16", 2}, {"c10::Half", 2}, {"c10::Float8_e4m3fn", 1}, {"c10::Float8_e5m2", 1},
        {"c10::complex<float>", 8}, {"float", 4}, {"double", 8}, {"long", 8}, {"int", 4}, {"short", 2},
        {"bool", 1}, {"unsigned char", 1}, {"signed char", 1}};
    const char *best = NULL;
    int size = 0;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        size_t n = strlen(types[i].t);
        for (const char *q = strstr(p, types[i].t); q && (!until || q < until); q = strstr(q + 1, types[i].t)) {
            char before = q > p ? q[-1] : ' ', after = q[n];   /* a whole type name, not part of another */
            if ((before == '<' || before == '(' || before == ' ' || before == ',') &&
                (after == '>' || after == ')' || after == ',' || after == ' ')) {
                if (!best || q < best) { best = q; size = types[i].size; }
                break;
            }
        }
    }
    return size;
}

/* PyTorch's vectorized and unrolled elementwise kernels, (int N, functor, std::array<char*, K>, ...): the bytes
 * one element moves, K tensors of the first element type named in the functor; a cast to bf16 or fp16 names
 * its input's type and its kernel the output's (casts that convert as they load: cast_elem_bytes). 0 where the
 * name does not tell. */
static int elementwise_elem_bytes(const char *p) {
    const char *arr = strstr(p, "std::array<char*, ");
    int tensors = arr ? atoi(arr + 18) : 0, in = first_type_size(p, arr);
    if (tensors == 2 && strstr(p, "::bfloat16_copy_kernel_cuda(")) return in + 2;   /* a cast to bf16: in, out */
    if (tensors == 2 && strstr(p, "::float16_copy_kernel_cuda(")) return in + 2;
    return tensors > 0 ? tensors * in : 0;
}

/* An elementwise kernel that casts as it loads and stores (unrolled_elementwise_kernel<..., LoadWithCast<K>,
 * StoreWithCast<1>>(int N, f, data, ic, oc, loader, storer)): each tensor's element size is in the loader and
 * storer, {ScalarType dtypes[K]; uint32_t element_sizes[K]}; K is read from the name (the kernels' parameter
 * sizes are not known here). 0 when a size is not one of an element's. */
static int cast_elem_bytes(void *const *args, int loads) {
    int bytes = 0;
    for (int a = 5; a <= 6; a++) {
        uint32_t k = a == 5 ? (uint32_t)loads : 1, off = (k + 3) & ~3u;
        if (!args[a]) return 0;
        for (uint32_t i = 0; i < k; i++) {
            uint32_t sz;
            memcpy(&sz, (const char *)args[a] + off + 4 * i, sizeof sz);
            if (sz != 1 && sz != 2 && sz != 4 && sz != 8 && sz != 16) return 0;
            bytes += (int)sz;
        }
    }
    return bytes;
}

static int row_class(tw_kernel *k) {
    const char *p = k->pretty;
    if (!strncmp(p, "void at::native::vectorized_elementwise_kernel<", 47) ||
        !strncmp(p, "void at::native::unrolled_elementwise_kernel<", 45)) {
        const char *ld = strstr(p, "LoadWithCast<");
        if (ld && strstr(p, "StoreWithCast<1>")) {   /* ew_elem_bytes: here the loader's K */
            k->ew_elem_bytes = atoi(ld + 13);
            return k->ew_elem_bytes > 0 && k->ew_elem_bytes <= 8 ? ROW_CAST : ROW_NONE;
        }
        k->ew_elem_bytes = elementwise_elem_bytes(p);
        return k->ew_elem_bytes ? ROW_ELEMENTWISE : ROW_NONE;
    }
    /* PyTorch's generic elementwise kernel (elementwise_kernel<nt, vt, lambda>(int N, lambda)), which runs
     * broadcast and strided binary ops: the output and one input are counted, as a broadcast operand is
     * small (a norm's per-row scale); a strided one is read in full and undercounted. */
    const char *bf = strstr(p, "gpu_kernel_impl_nocast<at::native::BinaryFunctor<");
    if (!strncmp(p, "void at::native::elementwise_kernel<", 36) && bf) {
        k->ew_elem_bytes = 2 * first_type_size(bf + 49, NULL);
        return k->ew_elem_bytes ? ROW_ELEMENTWISE : ROW_NONE;
    }
    if (!strncmp(p, "triton_poi_", 11)) return ROW_INDUCTOR_POINTWISE;
    if (!strncmp(p, "triton_red_", 11) || !strncmp(p, "triton_per_", 11)) return ROW_INDUCTOR_REDUCTION;
    /* cunn_SoftMaxForward<ILP, scalar_t, acc_t, out_t, Epilogue>(out_t*, scalar_t const*, int classes) and its
     * Smem and Reg forms (a long `classes`): one block per row of `classes` elements, read once and written
     * once. Its bytes are for the transfer only. */
    if (strstr(p, "at::native::(anonymous namespace)::cunn_SoftMaxForward<") ||
        strstr(p, "at::native::(anonymous namespace)::cunn_SoftMaxForwardSmem<") ||
        strstr(p, "at::native::(anonymous namespace)::cunn_SoftMaxForwardReg<")) {
        const char *t = strchr(p, '<');
        k->ew_elem_bytes = t ? 2 * first_type_size(t, strchr(t, '(')) : 0;
        return k->ew_elem_bytes ? ROW_SOFTMAX : ROW_NONE;
    }
    if (!strncmp(p, "void at::native::reduce_kernel<", 31)) {
        const char *op = strstr(p, "ReduceOp<");   /* ReduceOp<scalar_t, ...>: the input's element type */
        k->ew_elem_bytes = op ? first_type_size(op, NULL) : 0;
        return ROW_REDUCE;
    }
    /* CUTLASS 3 GEMMs launched by libraries' own code (vLLM's fp8/int8 scaled_mm): the kernel is
     * device_kernel<GemmKernel>(Params), and a quantized A operand's type is in its name. Grouped and
     * pointer-array GEMMs (MoE experts) keep their shapes in device memory: left to the launch size. */
    if (!strncmp(p, "void cutlass::device_kernel<", 28) && (strstr(p, "gemm") || strstr(p, "Gemm")) &&
        !strstr(p, "roup") && !strstr(p, "PtrArray") && !strstr(p, "moe")) {
        const char *rest;
        int a = cutlass_type(p, &rest), o = cutlass_type(rest, NULL);
        if (a == 28 || a == 29 || a == 3) {
            k->gemm_types = a | (o >= 0 ? o : 14) << 8;   /* read once: the name is long, launches many */
            return ROW_CUTLASS_GEMM;
        }
    }
    /* vectorized_layer_norm_kernel<T, T_ACC, rms_norm>(int N, ...): one block per row of N elements */
    if (strstr(p, "at::native::") && strstr(p, "vectorized_layer_norm_kernel<") && strstr(p, ">(int,")) return ROW_LAYER_NORM;
    return ROW_NONE;
}

/* PyTorch's ReduceOp (ATen/native/cuda/Reduce.cuh) is the kernel's one argument. Its ReduceConfig follows
 * the reduction functor and identity, at an offset that depends on their types, and begins with int
 * element_size_bytes, num_inputs (per output), num_outputs, step_input, step_output, ctas_per_output,
 * input_mult[3], output_mult[2], block_width, block_height, num_threads; the launch's block is
 * (block_width, block_height). The config is found by that signature within the first 64 bytes. */
static int reduce_config(const unsigned char *arg, const uint32_t block[3], int64_t rows[2]) {
    for (int off = 0; off <= 64; off += 4) {
        int32_t c[14];
        memcpy(c, arg + off, sizeof c);
        int esb = c[0], ni = c[1], no = c[2], bw = c[11], bh = c[12], nt = c[13];
        if ((esb == 1 || esb == 2 || esb == 4 || esb == 8 || esb == 16) && ni > 0 && no > 0 && c[3] > 0 && c[4] > 0 &&
            c[5] > 0 && bw > 0 && bh > 0 && (uint32_t)bw == block[0] && (uint32_t)bh == block[1] && nt == bw * bh) {
            rows[0] = no;
            rows[1] = ni;
            return 1;
        }
    }
    return 0;
}

/* A CUTLASS 3 GEMM kernel's Params begin with its problem shape (M, N, K, L as ints; some kernels put the
 * GemmUniversalMode, 0-4, before it). vLLM's scaled_mm computes C = A B with A the activations (M tokens) and
 * swaps the operands when M is small (C^T = B^T A^T: then N is the tokens), so the side of 64 or fewer is taken
 * as the tokens. The annotation is the one cuBLAS gives F.linear: m = output features, n = tokens, trans_a.
 * Checked on vLLM 0.24.0's cutlass_3x_gemm_sm90_fp8 at 16 tokens: (6144, 16, 4096, 1) at offset 0. */
static int problem_shape(const unsigned char *arg, int32_t c[4]) {
    for (int off = 0; off <= 4; off += 4) {
        int32_t mode;
        memcpy(&mode, arg, sizeof mode);
        if (off && (mode < 0 || mode > 4)) return 0;
        memcpy(c, arg + off, 4 * sizeof *c);
        if (c[0] > 0 && c[1] > 0 && c[2] > 0 && c[3] > 0 && c[0] <= (1 << 24) && c[1] <= (1 << 24) &&
            c[2] <= (1 << 24) && c[3] <= 65536)
            return 1;
    }
    return 0;
}

static int cutlass_gemm(const tw_kernel *k, const unsigned char *arg, tw_annotation *ann) {
    int32_t c[4];
    if (!problem_shape(arg, c)) return 0;
    int swapped = c[1] <= 64 && c[0] > 64;   /* N is the small side: the tokens */
    int64_t tokens = swapped ? c[1] : c[0], out = swapped ? c[0] : c[1];
    memset(ann, 0, sizeof *ann);
    ann->kind = TW_ANN_GEMM;
    ann->u.gemm.m = out; ann->u.gemm.n = tokens; ann->u.gemm.k = c[2]; ann->u.gemm.batch = c[3];
    ann->u.gemm.a_type = ann->u.gemm.b_type = k->gemm_types & 0xff;
    ann->u.gemm.c_type = k->gemm_types >> 8;
    ann->u.gemm.compute_type = -1;
    ann->u.gemm.trans_a = 1; ann->u.gemm.trans_b = 0;
    ann->u.gemm.epilogue = 1;
    ann->u.gemm.source = TW_GEMM_KERNEL_ARGS;
    return 1;
}

unsigned tw_inductor_configs_gen;
static pthread_mutex_t config_lock = PTHREAD_MUTEX_INITIALIZER;

/* The XBLOCK (a power of two) with which Inductor's 1-D grid over x extents xs[0..n) has `blocks` blocks: the
 * sum of their blocks (a combo kernel runs several fused kernels side by side, xnumel_0, xnumel_1, ... each
 * from a block boundary); 0 when none gives the grid, i.e. the integers read are not the extents. */
static int64_t xblock_of(const int32_t *xs, int n, uint32_t blocks) {
    for (int64_t xb = 1; xb <= 65536; xb <<= 1) {
        int64_t g = 0;
        for (int i = 0; i < n; i++) g += (xs[i] + xb - 1) / xb;
        if (g == blocks) return xb;
        if (g < blocks) return 0;   /* fewer blocks at every larger XBLOCK */
    }
    return 0;
}

/* The config's XBLOCK noted on the kernel once per (block threads, XBLOCK): a function's config is fixed, and
 * under one name Inductor compiles one function per config it autotunes (8-warp blocks of 512 and 4-warp
 * blocks of 1024, say). One-block launches are not used: Inductor clamps XBLOCK to a small extent. */
static int has_config(const tw_kernel *k, int n, uint32_t t, int64_t xb) {
    for (int i = 0; i < n; i++) if (k->config_threads[i] == t && k->config_xblock[i] == xb) return 1;
    return 0;
}

static void note_config(tw_kernel *k, const tw_op *op, int64_t xb) {
    if (op->grid[0] < 2) return;
    uint32_t t = op->block[0] * op->block[1] * op->block[2];
    if (has_config(k, __atomic_load_n(&k->nconfigs, __ATOMIC_ACQUIRE), t, xb)) return;   /* every launch but one */
    pthread_mutex_lock(&config_lock);
    int n = k->nconfigs;
    if (!has_config(k, n, t, xb) && n < TW_INDUCTOR_CONFIGS) {
        k->config_threads[n] = t;
        k->config_xblock[n] = xb;
        __atomic_store_n(&k->nconfigs, n + 1, __ATOMIC_RELEASE);
        __atomic_add_fetch(&tw_inductor_configs_gen, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&config_lock);
}

/* Inductor's Triton kernels take their tensors' pointers, then integers: the dynamic sizes (ks0, ...), then
 * xnumel and, for a reduction, r0_numel (a combo kernel: xnumel_0, xnumel_1, ..., its reductions' r0_numel
 * a constant of the code); Triton appends two scratch pointers (triton 3.6's launcher: global and profile
 * scratch). The reading is kept only where the grid agrees with it (xblock_of): a pointwise kernel's x extent
 * is the sum of its last k integers for the largest k that fits (k = 1 unless a combo), a reduction's the
 * integer before r0_numel (combo reductions are left unread: their row length is not an argument).
 * (x extent, r0_numel or 1) go to op->rows, the pointers before the integers to op->ptr_args. Integers are
 * 4 bytes up to 2^31 (a larger extent is 8 bytes, like a pointer: not read). */
static void inductor_shape(tw_kernel *k, tw_op *op, void *const *args, const uint32_t *psize, int np, int reduction) {
    if (!psize || np < 4 || op->grid[1] != 1 || op->grid[2] != 1) return;
    if (psize[np - 1] != 8 || psize[np - 2] != 8) return;
    int end = np - 2, first = end;   /* [first, end): the trailing 4-byte integers */
    while (first > 0 && psize[first - 1] == 4 && end - first < 8) first--;
    int32_t v[8];
    int n = end - first;
    for (int i = 0; i < n; i++) { memcpy(&v[i], args[first + i], sizeof v[i]); if (v[i] <= 0) return; }
    int64_t x = 0, r = 1, xb = 0;
    if (reduction) {
        if (n < 2 || !(xb = xblock_of(&v[n - 2], 1, op->grid[0]))) return;
        x = v[n - 2];
        r = v[n - 1];
    } else {
        for (int kk = n; kk >= 1 && !xb; kk--) {
            if (!(xb = xblock_of(&v[n - kk], kk, op->grid[0]))) continue;
            for (int i = n - kk; i < n; i++) x += v[i];
        }
        if (!xb) return;
    }
    int ptrs = 0;
    for (int i = 0; i < first; i++) ptrs += psize[i] == 8;
    op->rows[0] = x;
    op->rows[1] = r;
    op->ptr_args = ptrs;
    note_config(k, op, xb);
}

void tw_kernel_row_shape(tw_op *op, void *const *args, const uint32_t *param_size, int n_params) {
    tw_kernel *k = (tw_kernel *)op->kernel;
    if (!k) return;
    tw_moe_take(op);
    if (!args || !args[0]) return;
    /* a benign race: every thread computes the same; release/acquire so that gemm_types is seen with it */
    int rc = __atomic_load_n(&k->row_class, __ATOMIC_ACQUIRE);
    if (!rc) { rc = row_class(k); __atomic_store_n(&k->row_class, rc, __ATOMIC_RELEASE); }
    if (rc == ROW_LAYER_NORM) {
        int32_t n;
        memcpy(&n, args[0], sizeof n);
        if (n > 0) { op->rows[0] = (int64_t)op->grid[0] * op->grid[1] * op->grid[2]; op->rows[1] = n; }
    } else if (rc == ROW_REDUCE) {
        /* its bytes, for the transfer: the input read once, one element written per output (the config's
         * element size is the accumulator's: an argmax's value and index) */
        if (reduce_config(args[0], op->block, op->rows) && k->ew_elem_bytes)
            op->ew_bytes = (double)op->rows[0] * (op->rows[1] + 1) * k->ew_elem_bytes;
    } else if (rc == ROW_CUTLASS_GEMM && op->ann.kind == TW_ANN_NONE) {
        cutlass_gemm(k, args[0], &op->ann);
    } else if (rc == ROW_INDUCTOR_POINTWISE || rc == ROW_INDUCTOR_REDUCTION) {
        inductor_shape(k, op, args, param_size, n_params, rc == ROW_INDUCTOR_REDUCTION);
    } else if (rc == ROW_SOFTMAX && args[2]) {
        int32_t classes;   /* int, or the low half of a long (little-endian) */
        memcpy(&classes, args[2], sizeof classes);
        if (classes > 0)
            op->ew_bytes = (double)op->grid[0] * op->grid[1] * op->grid[2] * classes * k->ew_elem_bytes;
    } else if (rc == ROW_ELEMENTWISE || rc == ROW_CAST) {
        int32_t n;   /* (int N, ...): the elements; a cast's bytes per element are in its loader and storer */
        memcpy(&n, args[0], sizeof n);
        int b = rc == ROW_CAST ? cast_elem_bytes(args, k->ew_elem_bytes) : k->ew_elem_bytes;
        if (n > 0 && b > 0) op->ew_bytes = (double)n * b;
    }
}
