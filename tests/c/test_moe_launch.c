/* The fused-MoE announcement (shim_c/core/moe.c) as vLLM's binding uses it: tw_moe_next, then the next launch
 * of a kernel named fused_moe_kernel on that thread is timed as the batched GEMM over the experts the batch
 * touches. Prints each launch's event-timed duration (us) as JSON; tests/test_c_parts.py checks them against
 * the moemodel row. Each measured launch queues behind a long one, so its events time the kernel alone. */
#include <stdio.h>

#include "fake_cuda.h"
extern void tw_moe_next(const char *kernel_prefix, int64_t tokens, int top_k, int experts, int64_t n, int64_t k,
                        int block_m, int w_type, int act_type);

static void moe_stub(void) {}
static void other_stub(void) {}

enum { BF16 = 14, E = 60, TOP_K = 4, N = 2816, K = 2048 };
static cudaStream_t s;
static cudaEvent_t e0, e1;
static const dim3 grid = {128, 1, 1}, block = {128, 1, 1};

static void announce(int64_t tokens, int block_m) { tw_moe_next("fused_moe_kernel", tokens, TOP_K, E, N, K, block_m, BF16, BF16); }
static void launch(void (*f)(void)) { cudaLaunchKernel((const void *)f, grid, block, NULL, 0, s); }
static void busy(void) { announce(8192, 64); launch(moe_stub); }   /* some hundreds of us: the stream backs up */

static double elapsed_us(void) {
    cudaEventRecord(e1, s);
    cudaStreamSynchronize(s);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    return ms * 1e3;
}

/* the event-timed duration (us) of a launch of f, announced as `tokens` tokens first when tokens > 0, and of
 * a launch of g after it when g is given */
static double timed(int64_t tokens, int block_m, void (*f)(void), void (*g)(void)) {
    busy();
    cudaEventRecord(e0, s);
    if (tokens > 0) announce(tokens, block_m);
    launch(f);
    if (g) launch(g);
    return elapsed_us();
}

int main(void) {
    void **h = __cudaRegisterFatBinary(&fatbin);
    __cudaRegisterFunction(h, (const char *)moe_stub, (char *)"fused_moe_kernel", "fused_moe_kernel", -1, 0, 0, 0, 0, 0);
    __cudaRegisterFunction(h, (const char *)other_stub, (char *)"other_kernel", "other_kernel", -1, 0, 0, 0, 0, 0);
    __cudaRegisterFatBinaryEnd(h);
    cudaStreamCreate(&s);
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    launch(moe_stub); launch(other_stub); cudaStreamSynchronize(s);   /* first launches load the modules */

    double plain = timed(0, 0, moe_stub, NULL);
    double t1 = timed(1, 16, moe_stub, NULL);
    double t2 = timed(2, 16, moe_stub, NULL);
    double t4096 = timed(4096, 64, moe_stub, NULL);
    double after = timed(4096, 64, moe_stub, moe_stub) - t4096;   /* the announcement is taken by one launch */
    /* another kernel first: the announcement is dropped, not kept for the next fused_moe_kernel */
    double mismatch = timed(4096, 64, other_stub, moe_stub);
    double other = timed(0, 0, other_stub, NULL);
    /* a captured launch keeps the announcement it was captured with, at every replay */
    void *graph, *exec;
    cudaStream_t cs;
    cudaStreamCreate(&cs);
    cudaStreamBeginCapture(cs, 0);
    announce(1, 16);
    cudaLaunchKernel((const void *)moe_stub, grid, block, NULL, 0, cs);
    cudaStreamEndCapture(cs, &graph);
    cudaGraphInstantiate(&exec, graph, 0);
    double replay[2];
    for (int i = 0; i < 2; i++) {
        busy();
        cudaEventRecord(e0, s);
        cudaGraphLaunch(exec, s);
        replay[i] = elapsed_us();
    }
    /* two such launches captured on two streams (fork and join): they overlap and share the bandwidth */
    cudaStream_t cs2;
    cudaEvent_t fork, join;
    cudaStreamCreate(&cs2); cudaEventCreate(&fork); cudaEventCreate(&join);
    cudaStreamBeginCapture(cs, 0);
    cudaEventRecord(fork, cs);
    cudaStreamWaitEvent(cs2, fork, 0);
    announce(1, 16);
    cudaLaunchKernel((const void *)moe_stub, grid, block, NULL, 0, cs);
    announce(1, 16);
    cudaLaunchKernel((const void *)moe_stub, grid, block, NULL, 0, cs2);
    cudaEventRecord(join, cs2);
    cudaStreamWaitEvent(cs, join, 0);
    cudaStreamEndCapture(cs, &graph);
    cudaGraphInstantiate(&exec, graph, 0);
    busy();
    cudaEventRecord(e0, s);
    cudaGraphLaunch(exec, s);
    double pair = elapsed_us();
    printf("{\"plain\": %.4f, \"t1\": %.4f, \"t2\": %.4f, \"t4096\": %.4f, \"after\": %.4f, \"mismatch\": %.4f, "
           "\"other\": %.4f, \"replay\": [%.4f, %.4f], \"pair\": %.4f}\n", plain, t1, t2, t4096, after, mismatch, other,
           replay[0], replay[1], pair);
    return 0;
}
