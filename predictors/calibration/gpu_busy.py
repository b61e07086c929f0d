"""Keep a real GPU busy for a given time: one torch.cuda._sleep kernel (it spins for a number of GPU cycles),
its cycles per ms timed once with events (twice, so that the second reading is taken with the clock up).
The calibration scripts queue work behind it to see when the host waits for the GPU."""
import torch

_cycles_per_ms: list = []


def busy(ms: float) -> None:
    if not _cycles_per_ms:
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for _ in range(2):
            e0.record()
            torch.cuda._sleep(50_000_000)
            e1.record()
            torch.cuda.synchronize()
        _cycles_per_ms.append(50_000_000 / e0.elapsed_time(e1))
    torch.cuda._sleep(int(_cycles_per_ms[0] * ms))
