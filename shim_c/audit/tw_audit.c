/* LD_AUDIT module: redirects every load of a real CUDA library to timewarp's stand-in, whatever name,
 * path or RPATH asks for it (PyTorch preloads NVIDIA's wheels by absolute path; its libraries carry
 * RPATHs into site-packages/nvidia; Triton and vLLM dlopen libcuda.so.1). ZLUDA's zluda_ld does the same.
 * The module runs in its own link namespace before the program: it uses only libc and the environment. */
#define _GNU_SOURCE
#include <link.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* prefix of the requested file name -> our file. Longer prefixes first where one prefixes another. */
static const char *const map[][2] = {
    {"libcudart.so", "libcudart.so.13"},
    {"libcuda.so", "libcuda.so.1"},
    {"libnvidia-ml.so", "libnvidia-ml.so.1"},
    {"libcublasLt.so", "libcublasLt.so.13"},
    {"libcublas.so", "libcublas.so.13"},
    {"libcudnn_graph.so", "libcudnn_graph.so.9"},
    {"libcudnn_ops.so", "libcudnn_ops.so.9"},
    {"libcudnn_cnn.so", "libcudnn_cnn.so.9"},
    {"libcudnn_adv.so", "libcudnn_adv.so.9"},
    {"libcudnn.so", "libcudnn.so.9"},
    {"libnccl.so", "libnccl.so.2"},
    {"libcusparseLt.so", "libcusparseLt.so.0"},
    {"libcusparse.so", "libcusparse.so.12"},
    {"libcufft.so", "libcufft.so.12"},
    {"libcurand.so", "libcurand.so.10"},
    {"libcusolver.so", "libcusolver.so.12"},
    {"libnvrtc.so", "libnvrtc.so.13"},
    {"libnvJitLink.so", "libnvJitLink.so.13"},
    {"libcupti.so", "libcupti.so.13"},
    {"libcufile.so", "libcufile.so.0"},
    {"libnvshmem_host.so", "libnvshmem_host.so.3"},
};
#define NMAP (sizeof map / sizeof map[0])
static char paths[NMAP][PATH_MAX];
static int active;

/* Tell the core that the redirector runs. The module has its own libc and environment copy, but the
 * environment strings themselves are the process's: flipping TIMEWARP_AUDIT=0 to 1 in place is seen by the
 * core (shim_c/core/device.c), which otherwise explains why the program will find NVIDIA's real libraries. */
static void mark_active(void) {
    char *v = getenv("TIMEWARP_AUDIT");
    if (v && v[0] == '0' && v[1] == 0) v[0] = '1';
}

unsigned int la_version(unsigned int version) {
    mark_active();
    const char *dir = getenv("TIMEWARP_LIB_DIR");
    if (dir && *dir) {
        for (size_t i = 0; i < NMAP; i++) snprintf(paths[i], PATH_MAX, "%s/%s", dir, map[i][1]);
        active = 1;
    }
    return version < LAV_CURRENT ? version : LAV_CURRENT;
}

char *la_objsearch(const char *name, uintptr_t *cookie, unsigned int flag) {
    (void)cookie;
    if (!active || flag != LA_SER_ORIG || !name) return (char *)name;
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    for (size_t i = 0; i < NMAP; i++) {
        size_t n = strlen(map[i][0]);
        /* exact stem: "libcublas.so" must not catch "libcublasLt.so" (handled by order) nor "libcudart.so"
         * catch "libcudart_static" (no .so) */
        if (!strncmp(base, map[i][0], n) && (base[n] == 0 || base[n] == '.')) return paths[i];
    }
    return (char *)name;
}
