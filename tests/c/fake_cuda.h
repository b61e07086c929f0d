/* The CUDA runtime calls and registration hooks the C tests make, declared by hand (no CUDA headers here):
 * they link against the fake libcudart and libtimewarp. A test registers its host stubs as kernels of the
 * empty fat binary `fatbin` under the names the core is to see. */
#ifndef TW_TEST_FAKE_CUDA_H
#define TW_TEST_FAKE_CUDA_H
#include <stddef.h>
#include <stdint.h>

typedef struct { unsigned x, y, z; } dim3;
typedef void *cudaStream_t;
typedef void *cudaEvent_t;
extern void **__cudaRegisterFatBinary(void *fatCubin);
extern void __cudaRegisterFatBinaryEnd(void **h);
extern void __cudaRegisterFunction(void **h, const char *hostFun, char *deviceFun, const char *deviceName, int tl,
                                   void *tid, void *bid, void *bDim, void *gDim, int *wSize);
extern int cudaLaunchKernel(const void *func, dim3 g, dim3 b, void **args, size_t shmem, cudaStream_t s);
extern int cudaLaunchHostFunc(cudaStream_t s, void (*fn)(void *), void *data);
extern int cudaStreamCreate(cudaStream_t *s);
extern int cudaStreamSynchronize(cudaStream_t s);
extern int cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags);
extern int cudaStreamBeginCapture(cudaStream_t s, int mode);
extern int cudaStreamEndCapture(cudaStream_t s, void **graph);
extern int cudaGraphInstantiate(void **exec, void *graph, unsigned long long flags);
extern int cudaGraphLaunch(void *exec, cudaStream_t s);
extern int cudaEventCreate(cudaEvent_t *e);
extern int cudaEventRecord(cudaEvent_t e, cudaStream_t s);
extern int cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b);
extern int cudaMalloc(void **p, size_t n);
extern int cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s);

static struct { int magic, version; const void *data; void *filename; } fatbin = {0x466243b1, 1, NULL, NULL};

#endif
