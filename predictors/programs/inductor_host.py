"""Host cost of Inductor's launch path, call by call (issue 5: vLLM's forward outside CUDA graphs).

    python inductor_host.py [--tokens 896] [--quick]

vLLM 0.24 runs a step of more than 512 tokens through its torch.compile'd model without CUDA graphs: each layer
is Inductor's generated `call()` (buffers from the caching allocator, tensor views, a device guard, four GEMMs
through `extern_kernels.mm`, four Triton kernels through torch's static launcher) and the attention between
such pieces. On the real H200 hosts that forward took 1.3-2.8x the emulated host time in serving
(docs/LIMITATIONS.md). This program times each kind of call the generated code makes, alone, and a compiled
Llama MLP block (norm, gate/up GEMM, SiLU-and-multiply, down GEMM, residual add) at a fixed token count: host
microseconds per call, bursts without synchronizing (the GPU's queue never fills), median of several bursts.
Also a small host-to-device copy from pinned memory (vLLM's input preparation makes several per step).
Prints one JSON object {name: microseconds}. Runs unmodified on a real GPU and under `timewarp run`.
"""
import argparse
import functools
import json
import time

import torch
import torch.nn.functional as F

import host_timing  # this folder's: the burst timing both host programs use

ap = argparse.ArgumentParser()
ap.add_argument("--tokens", type=int, default=896)
ap.add_argument("--quick", action="store_true")
a = ap.parse_args()
BURSTS = 3 if a.quick else 9


host_us = functools.partial(host_timing.host_us, calls=20, bursts=BURSTS)


# what the generated code calls (torch/_inductor/codegen/wrapper.py writes these imports)
from torch._inductor.select_algorithm import extern_kernels  # noqa: E402
empty_strided_cuda = torch._C._dynamo.guards._empty_strided_cuda
reinterpret_tensor = torch._C._dynamo.guards._reinterpret_tensor
get_raw_stream = torch._C._cuda_getCurrentRawStream

M, H, I = a.tokens, 4096, 14336
bf = torch.bfloat16
res = {"torch": torch.__version__, "tokens": M}
with torch.no_grad():
    x = torch.randn(M, H, device="cuda", dtype=bf)
    w = torch.randn(H, H, device="cuda", dtype=bf)
    out = torch.empty(M, H, device="cuda", dtype=bf)
    res["empty_loop"] = host_us(lambda: None)
    res["empty_strided_cuda"] = host_us(lambda: empty_strided_cuda((M, H), (H, 1), bf))
    res["reinterpret_tensor"] = host_us(lambda: reinterpret_tensor(w, (H, H), (1, H), 0))

    def guard():
        with torch.cuda._DeviceGuard(0):
            torch.cuda.set_device(0)
    res["device_guard_set_device"] = host_us(guard)
    res["get_raw_stream"] = host_us(lambda: get_raw_stream(0))
    # the GEMM as the generated code calls it: out= a buffer, the weight as a transposed view
    res["extern_mm_out"] = host_us(lambda: extern_kernels.mm(x, reinterpret_tensor(w, (H, H), (1, H), 0), out=out))
    res["torch_mm"] = host_us(lambda: torch.mm(x, w.t()))
    res["add_eager"] = host_us(lambda: x + x)

    # a Llama MLP block, compiled with a dynamic token count as vLLM compiles its model
    wn = torch.ones(H, device="cuda", dtype=bf)
    wgu = torch.randn(2 * I, H, device="cuda", dtype=bf) * 0.01
    wd = torch.randn(H, I, device="cuda", dtype=bf) * 0.01

    def block(h, res_):
        r = h + res_
        n = F.rms_norm(r, (H,), wn, 1e-5)
        gu = F.linear(n, wgu)
        g, u = gu.split(I, dim=-1)
        return F.linear(F.silu(g) * u, wd) + r

    f = torch.compile(block, dynamic=True)
    t0 = time.perf_counter()
    f(x, x)
    torch.cuda.synchronize()
    res["compile_s"] = round(time.perf_counter() - t0, 2)
    res["compiled_block"] = host_us(lambda: f(x, x))
    res["eager_block"] = host_us(lambda: block(x, x))

    # a small copy from pinned host memory, as vLLM's input preparation makes them
    src = torch.zeros(M, dtype=torch.int64).pin_memory()
    dst = torch.empty(M, dtype=torch.int64, device="cuda")
    res["copy_h2d_pinned_small"] = host_us(lambda: dst.copy_(src, non_blocking=True))
print(json.dumps(res))
