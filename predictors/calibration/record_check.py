"""A small program for checking the recorders against each other and against the emulator's launch records:
the GEMM entry points PyTorch uses (bf16 linear with and without bias, fp32 matmul, bf16 bmm), elementwise
kernels, a CUDA graph replay of a linear + SiLU, copies in three directions and a fill, each a few times.

    timewarp record --shim --out OUT -- python3 predictors/calibration/record_check.py      (real GPU)
    timewarp run --trace T.json -- python3 predictors/calibration/record_check.py           (emulated)
    python -m timewarp.predictors.compare_recorders OUT/launches.parquet T.json
"""
import torch
import torch.nn.functional as F

dev = torch.device("cuda")
bf = dict(device=dev, dtype=torch.bfloat16)
x = torch.randn(512, 4096, **bf)
w = torch.randn(14336, 4096, **bf)
b = torch.randn(14336, **bf)
x1 = torch.randn(8, 4096, **bf)
a32 = torch.randn(1024, 1024, device=dev)
q = torch.randn(32, 512, 128, **bf)
k = torch.randn(32, 128, 512, **bf)
h = torch.ones(1 << 24, dtype=torch.uint8).pin_memory()
d = torch.empty(1 << 24, dtype=torch.uint8, device=dev)
d2 = torch.empty_like(d)

for _ in range(3):
    F.linear(x, w)               # bf16, no bias
    F.linear(x1, w, b)           # bf16 with bias (cuBLASLt epilogue)
    a32 @ a32                    # fp32
    torch.bmm(q, k)              # bf16 batched
    F.silu(x) * x                # elementwise
    d.copy_(h, non_blocking=True)
    d2.copy_(d)
    h.copy_(d2, non_blocking=True)
    d.zero_()
torch.cuda.synchronize()

s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(2):
        F.silu(F.linear(x1, w))
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = F.silu(F.linear(x1, w))
for _ in range(3):
    g.replay()
torch.cuda.synchronize()
print("record_check done", flush=True)
