/* Cost of one intercepted kernel launch in the shim (issue 2, target < 1 us once the duration is cached).
 * Registers a kernel the way nvcc's generated code does, launches it N times through the CUDA 13 launch
 * ABI (__cudaLaunchKernel) and through cudaLaunchKernel, and replays a captured graph; reports CPU time per
 * call (CLOCK_THREAD_CPUTIME_ID passes through the virtual clock untouched). Built and run by
 * launch_cost.py under `timewarp run`. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef struct { unsigned x, y, z; } dim3;
typedef void *cudaStream_t;
extern void **__cudaRegisterFatBinary(void *fatCubin);
extern void __cudaRegisterFatBinaryEnd(void **h);
extern void __cudaRegisterFunction(void **h, const char *hostFun, char *deviceFun, const char *deviceName, int tl,
                                   void *tid, void *bid, void *bDim, void *gDim, int *wSize);
extern int __cudaGetKernel(void **kernel, const void *hostFun);
extern int __cudaLaunchKernel(void *kernel, dim3 g, dim3 b, void **args, size_t shmem, cudaStream_t s);
extern int cudaLaunchKernel(const void *func, dim3 g, dim3 b, void **args, size_t shmem, cudaStream_t s);
extern int cudaStreamCreate(cudaStream_t *s);
extern int cudaStreamSynchronize(cudaStream_t s);
extern int cudaStreamBeginCapture(cudaStream_t s, int mode);
extern int cudaStreamEndCapture(cudaStream_t s, void **graph);
extern int cudaGraphInstantiate(void **exec, void *graph, unsigned long long flags);
extern int cudaGraphLaunch(void *exec, cudaStream_t s);

static void host_stub(void) {}
static struct { int magic, version; const void *data; void *filename; } fatbin = {0x466243b1, 1, NULL, NULL};

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    void **h = __cudaRegisterFatBinary(&fatbin);
    __cudaRegisterFunction(h, (const char *)host_stub, (char *)"_Z9my_kernelPfi", "_Z9my_kernelPfi", -1, 0, 0, 0, 0, 0);
    __cudaRegisterFatBinaryEnd(h);
    void *kernel = NULL;
    if (__cudaGetKernel(&kernel, (const void *)host_stub)) { fprintf(stderr, "__cudaGetKernel failed\n"); return 1; }
    cudaStream_t s;
    cudaStreamCreate(&s);
    float *p = 0; int len = 4096;
    void *args[] = {&p, &len};
    dim3 g = {16, 1, 1}, b = {256, 1, 1};
    for (int i = 0; i < 1000; i++) __cudaLaunchKernel(kernel, g, b, args, 0, s);  /* warm the cache */
    double t0 = cpu_s();
    for (long i = 0; i < n; i++) __cudaLaunchKernel(kernel, g, b, args, 0, s);
    double t1 = cpu_s();
    for (long i = 0; i < n; i++) cudaLaunchKernel((const void *)host_stub, g, b, args, 0, s);
    double t2 = cpu_s();
    cudaStreamSynchronize(s);
    void *graph, *exec;
    cudaStreamBeginCapture(s, 0);
    for (int i = 0; i < 100; i++) __cudaLaunchKernel(kernel, g, b, args, 0, s);
    cudaStreamEndCapture(s, &graph);
    cudaGraphInstantiate(&exec, graph, 0);
    long ng = n / 10;
    double t3 = cpu_s();
    for (long i = 0; i < ng; i++) cudaGraphLaunch(exec, s);
    double t4 = cpu_s();
    cudaStreamSynchronize(s);
    printf("{\"launches\": %ld, \"__cudaLaunchKernel_ns\": %.1f, \"cudaLaunchKernel_ns\": %.1f, "
           "\"launches_per_s\": %.0f, \"graph_launch_ns\": %.1f}\n",
           n, (t1 - t0) / n * 1e9, (t2 - t1) / n * 1e9, n / (t1 - t0), (t4 - t3) / ng * 1e9);
    return 0;
}
