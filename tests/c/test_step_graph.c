/* A full CUDA graph whose attention node is timed from the step context (shim_c/core/step.c): a replay
 * after the context changed must last the attention's new time, and a node after the attention (here a
 * host function) must run when the attention has ended, not at the offset it had at instantiation.
 * Built and run by tests/test_c_parts.py against the installed fake libcudart and libtimewarp. */
#include <stdio.h>
#include <time.h>

#include "fake_cuda.h"
extern void tw_step_set(int nreq, const int32_t *q, const int32_t *k, int heads, int kv_heads, int head_dim);
extern void tw_step_set_kv_elem(int bytes);

static void attn_stub(void) {}
static void combine_stub(void) {}

static double now_ms(void) {   /* the virtual clock: the host function runs at its stream's time */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static double called_at, last_called_at;   /* the host function's latest run, and the one before it */
static void host_fn(void *p) { (void)p; last_called_at = called_at; called_at = now_ms(); }

/* Replays `measured` at a decode step of n requests at context ctx, queued behind a replay of `attn` (the
 * attention graph) at 64 requests of 8192 tokens, half a millisecond, so that the events time the replay on its
 * stream alone: on an idle stream they would also time the host's launch, which a loaded machine stretches past
 * a short attention. Returns its milliseconds. */
static float replay_behind_long(void *attn, void *measured, cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1,
                                int32_t *q, int32_t *k, int n, int ctx) {
    for (int i = 0; i < 64; i++) { q[i] = 1; k[i] = 8192; }
    tw_step_set(64, q, k, 32, 8, 128);
    cudaGraphLaunch(attn, s);
    for (int i = 0; i < n; i++) k[i] = ctx;
    tw_step_set(n, q, k, 32, 8, 128);
    cudaEventRecord(e0, s);
    cudaGraphLaunch(measured, s);
    cudaEventRecord(e1, s);
    cudaStreamSynchronize(s);
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    return ms;
}

static int fails;
#define CHECK(c, ...) do { if (!(c)) { printf("FAIL: " __VA_ARGS__); printf("\n"); fails++; } } while (0)

int main(void) {
    void **h = __cudaRegisterFatBinary(&fatbin);
    /* a name step.c classifies as FA3's main kernel */
    __cudaRegisterFunction(h, (const char *)attn_stub, (char *)"_ZN5flash16FlashAttnFwdSm90Ev",
                           "_ZN5flash16FlashAttnFwdSm90Ev", -1, 0, 0, 0, 0, 0);
    /* and as FA3's split-KV combine kernel */
    __cudaRegisterFunction(h, (const char *)combine_stub, (char *)"_ZN5flash19FlashAttnFwdCombineEv",
                           "_ZN5flash19FlashAttnFwdCombineEv", -1, 0, 0, 0, 0, 0);
    __cudaRegisterFatBinaryEnd(h);
    cudaStream_t s;
    cudaStreamCreate(&s);
    dim3 g = {132, 1, 1}, b = {384, 1, 1};
    void *graph, *exec;
    CHECK(cudaStreamBeginCapture(s, 0) == 0, "begin capture");
    cudaLaunchKernel((const void *)attn_stub, g, b, NULL, 0, s);
    cudaLaunchHostFunc(s, host_fn, NULL);
    CHECK(cudaStreamEndCapture(s, &graph) == 0, "end capture");
    CHECK(cudaGraphInstantiate(&exec, graph, 0) == 0, "instantiate");

    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    float ms[5];
    int32_t q[64], k[64];
    /* decode of 64 requests, at 512 and then 8192 tokens of context; then 8192 with an fp8 KV cache; then at
     * 640 (vLLM serving's case 3 in its steady state) and 320 (a short context: its tiles at the prompts' cost),
     * which tests/test_c_parts.py compares */
    static const int ctx[5] = {512, 8192, 8192, 640, 320};
    for (int round = 0; round < 5; round++) {
        for (int i = 0; i < 64; i++) { q[i] = 1; k[i] = ctx[round]; }
        tw_step_set_kv_elem(round == 2 ? 1 : 2);
        tw_step_set(64, q, k, 32, 8, 128);
        /* one unmeasured replay first: the first replay at a new context also pays one-off host work (the
         * prediction's miss) */
        cudaGraphLaunch(exec, s);
        cudaStreamSynchronize(s);
        ms[round] = replay_behind_long(exec, exec, s, e0, e1, q, k, 64, ctx[round]);
        /* the long replay's host function ran at its end, where the measured replay starts */
        double after = called_at - last_called_at;
        printf("context %d: graph %.4f ms, host function at +%.4f ms\n", k[0], ms[round], after);
        /* the host function follows the attention: it runs at the graph's end, not at the attention's
         * duration from instantiation (no context then). 20 us of slack: each callback runs a few us after
         * its time (the callback thread's own clock; the long replay's up to 10 us in the first round) */
        CHECK(after >= ms[round] - 0.020, "host function at +%.4f ms, before the attention's end (%.4f ms)", after,
              ms[round]);
    }
    /* without re-timing both replays take the same */
    CHECK(ms[1] > 3 * ms[0], "16x the context: the replay took %.4f ms against %.4f", ms[1], ms[0]);
    /* a long-context decode reads K and V: at one byte per element about half the time (fixed costs stay) */
    CHECK(ms[2] > 0.45 * ms[1] && ms[2] < 0.6 * ms[1], "fp8 KV cache: %.4f ms against %.4f in bf16", ms[2], ms[1]);
    tw_step_set_kv_elem(2);
    /* six requests at 2160 tokens (vLLM serving's case 19): FA3 splits them into 144 work units, a second,
     * partial wave on 132 SMs */
    float wave_ms = replay_behind_long(exec, exec, s, e0, e1, q, k, 6, 2160);
    /* a graph of the combine kernel alone (grid 5 x 16, a 16-request decode graph), replayed after a step in which
     * no request splits (64 at 640 tokens) and after one in which they do (6 at 2160) */
    void *cgraph, *cexec;
    dim3 cg = {80, 1, 1}, cb = {256, 1, 1};
    CHECK(cudaStreamBeginCapture(s, 0) == 0, "begin capture (combine)");
    cudaLaunchKernel((const void *)combine_stub, cg, cb, NULL, 0, s);
    CHECK(cudaStreamEndCapture(s, &cgraph) == 0, "end capture (combine)");
    CHECK(cudaGraphInstantiate(&cexec, cgraph, 0) == 0, "instantiate (combine)");
    float comb_ms[2] = {replay_behind_long(exec, cexec, s, e0, e1, q, k, 64, 640),
                        replay_behind_long(exec, cexec, s, e0, e1, q, k, 6, 2160)};
    if (!fails) printf("ALL OK\n");
    printf("{\"decode_64x640_us\": %.3f, \"decode_64x320_us\": %.3f, \"decode_6x2160_us\": %.3f, "
           "\"combine_unsplit_us\": %.3f, \"combine_split_us\": %.3f}\n", ms[3] * 1e3, ms[4] * 1e3, wave_ms * 1e3,
           comb_ms[0] * 1e3, comb_ms[1] * 1e3);
    return fails != 0;
}
