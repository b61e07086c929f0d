/* A CUDA graph captured over two streams (fork: an event recorded on the capturing stream, waited on by a
 * second; join: the reverse) replays its branches side by side (shim_c/core/graph.c): with every kernel
 * taking the same time d, a graph of A, then B1 B2 on the second stream beside C, then D, takes one d less
 * than the same five kernels captured on one stream. Prints the replays' durations (us) as JSON for
 * tests/test_c_parts.py, with those of graphs of one and two kernels (a replay also has a fixed cost). */
#include <stdio.h>

#include "fake_cuda.h"

static void k_stub(void) {}
static const dim3 grid = {4, 1, 1}, block = {128, 1, 1};
static void launch(cudaStream_t s) { cudaLaunchKernel((const void *)k_stub, grid, block, NULL, 0, s); }

static void *buf;
enum { BUF_BYTES = 256 << 20 };

static double replay_us(void *exec, cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1) {
    /* about half a millisecond: the stream backs up, the events time the replay alone (one fill, tens of us,
     * was less than the host's record-launch-record on a loaded machine: 1 CI run in a few) */
    for (int i = 0; i < 8; i++) cudaMemsetAsync(buf, 0, BUF_BYTES, s);
    cudaEventRecord(e0, s);
    cudaGraphLaunch(exec, s);
    cudaEventRecord(e1, s);
    cudaStreamSynchronize(s);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    return ms * 1e3;
}

int main(void) {
    void **h = __cudaRegisterFatBinary(&fatbin);
    __cudaRegisterFunction(h, (const char *)k_stub, (char *)"small_kernel", "small_kernel", -1, 0, 0, 0, 0, 0);
    __cudaRegisterFatBinaryEnd(h);
    cudaStream_t s, t;
    cudaEvent_t fork, join, e0, e1;
    cudaStreamCreate(&s); cudaStreamCreate(&t);
    cudaEventCreate(&fork); cudaEventCreate(&join); cudaEventCreate(&e0); cudaEventCreate(&e1);
    launch(s); cudaStreamSynchronize(s);
    if (cudaMalloc(&buf, BUF_BYTES)) return 1;

    void *g, *x[3], *x2;
    for (int n = 1; n <= 5; n += 2) {   /* 1, 3 and 5 kernels on one stream */
        cudaStreamBeginCapture(s, 0);
        for (int i = 0; i < n; i++) launch(s);
        cudaStreamEndCapture(s, &g);
        cudaGraphInstantiate(&x[n / 2], g, 0);
    }
    /* A; fork; B1 B2 on t | C on s; join; D */
    cudaStreamBeginCapture(s, 0);
    launch(s);
    cudaEventRecord(fork, s);
    cudaStreamWaitEvent(t, fork, 0);
    launch(t); launch(t);
    launch(s);
    cudaEventRecord(join, t);
    cudaStreamWaitEvent(s, join, 0);
    launch(s);
    int rc = cudaStreamEndCapture(s, &g);
    cudaGraphInstantiate(&x2, g, 0);
    double serial[3];
    for (int i = 0; i < 3; i++) serial[i] = replay_us(x[i], s, e0, e1);
    double branched = replay_us(x2, s, e0, e1);
    printf("{\"end_capture\": %d, \"serial\": [%.4f, %.4f, %.4f], \"branched\": %.4f}\n", rc, serial[0], serial[1],
           serial[2], branched);
    return 0;
}
