"""Small pieces of GPU work the calibration scripts share (they run from the repository root on a real GPU
and import this from their own folder)."""
import torch

# Llama-3-8B's linear layers as (in features k, out features n): y[T, n] = x[T, k] @ W[n, k]^T
LLAMA3_8B_LINEAR = {"qkv": (4096, 6144), "o": (4096, 4096), "gate_up": (4096, 28672), "down": (14336, 4096),
                    "lm_head": (4096, 128256)}

_cycles_per_ms: list = []


def busy(ms: float) -> None:
    """Keep the GPU busy for ms: one torch.cuda._sleep kernel (it spins for a number of GPU cycles), its
    cycles per ms timed once with events (twice, so that the second reading is taken with the clock up).
    The scripts queue work behind it to see when the host waits for the GPU."""
    if not _cycles_per_ms:
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for _ in range(2):
            e0.record()
            torch.cuda._sleep(50_000_000)
            e1.record()
            torch.cuda.synchronize()
        _cycles_per_ms.append(50_000_000 / e0.elapsed_time(e1))
    torch.cuda._sleep(int(_cycles_per_ms[0] * ms))


def graph_of_adds(x: torch.Tensor, n: int = 10) -> torch.cuda.CUDAGraph:
    """A CUDA graph of n in-place adds to x (warmed on a side stream first, as PyTorch's capture wants)."""
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        x.add_(1)
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        for _ in range(n):
            x.add_(1)
    return g
