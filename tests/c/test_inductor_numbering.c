/* An Inductor kernel whose graph numbered it differently (triton_poi_fused_add_5 here, _2 in the profile) takes
 * the profile's rows of the same fusion and block shape (shim_c/core/profile.c, the sibling layer); another
 * fusion (triton_poi_fused_mul_5) does not. Run under a profile with one kern row (tests/test_c_parts.py);
 * prints each launch's event-timed duration (us) as JSON. */
#include <stdio.h>

#include "fake_cuda.h"

static void same(void) {}
static void renumbered(void) {}
static void other(void) {}
static cudaStream_t s;
static cudaEvent_t e0, e1;
static void *buf;

static double timed(void (*f)(void)) {
    /* about half a millisecond: the stream backs up, the events time the launch alone (one fill, tens of us,
     * was less than the host's record-launch-record on a loaded machine) */
    for (int i = 0; i < 8; i++) cudaMemsetAsync(buf, 0, 256 << 20, s);
    cudaEventRecord(e0, s);
    cudaLaunchKernel((const void *)f, (dim3){64, 1, 1}, (dim3){128, 1, 1}, NULL, 0, s);
    cudaEventRecord(e1, s);
    cudaStreamSynchronize(s);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    return ms * 1e3;
}

int main(void) {
    void **h = __cudaRegisterFatBinary(&fatbin);
    __cudaRegisterFunction(h, (const char *)same, (char *)"triton_poi_fused_add_2", "triton_poi_fused_add_2", -1, 0, 0, 0, 0, 0);
    __cudaRegisterFunction(h, (const char *)renumbered, (char *)"triton_poi_fused_add_5", "triton_poi_fused_add_5", -1, 0, 0, 0, 0, 0);
    __cudaRegisterFunction(h, (const char *)other, (char *)"triton_poi_fused_mul_5", "triton_poi_fused_mul_5", -1, 0, 0, 0, 0, 0);
    __cudaRegisterFatBinaryEnd(h);
    cudaStreamCreate(&s);
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    if (cudaMalloc(&buf, 256 << 20)) return 1;
    timed(same); timed(renumbered); timed(other);   /* first launches load the module */
    double a = timed(same), b = timed(renumbered), c = timed(other);
    printf("{\"same\": %.4f, \"renumbered\": %.4f, \"other\": %.4f}\n", a, b, c);
    return 0;
}
