"""What the first launch of an instantiated CUDA graph costs the host (the driver uploads the executable graph
to the device at its first launch unless cudaGraphUpload did it before; PyTorch's CUDAGraph does not).

For graphs of N small kernels (PyTorch in-place adds, captured with torch.cuda.graph), three fresh graphs per
N: the host time of the first replay call and of the second (time.perf_counter around graph.replay(), the
GPU idle before each), and each replay's time to completion (with a synchronize). Run on the real GPU:

    python3 predictors/calibration/graph_upload_bench.py --out DIR

Writes DIR/graph_upload.json: per N, per graph, first/second call and completion times in seconds.
"""
from __future__ import annotations

import argparse
import json
import os
import time


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--sizes", default="1,10,100,400,1000")
    a = ap.parse_args()
    import torch
    x = torch.zeros(1024, device="cuda")
    x.add_(1)
    torch.cuda.synchronize()
    res = {"torch": torch.__version__, "device": torch.cuda.get_device_name(), "sizes": {}}
    for n in map(int, a.sizes.split(",")):
        rows = []
        for _ in range(3):
            g = torch.cuda.CUDAGraph()
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(2):
                    x.add_(1)
            torch.cuda.current_stream().wait_stream(s)
            torch.cuda.synchronize()
            with torch.cuda.graph(g):
                for _ in range(n):
                    x.add_(1)
            torch.cuda.synchronize()
            row = {}
            for k in ("first", "second", "third"):
                t0 = time.perf_counter()
                g.replay()
                t1 = time.perf_counter()
                torch.cuda.synchronize()
                t2 = time.perf_counter()
                row[k + "_call_s"], row[k + "_done_s"] = t1 - t0, t2 - t0
            rows.append(row)
        res["sizes"][n] = rows
        f = [r["first_call_s"] * 1e6 for r in rows]
        s2 = [r["second_call_s"] * 1e6 for r in rows]
        print(f"N={n}: first replay call {sorted(f)[1]:.1f} us, second {sorted(s2)[1]:.1f} us (medians of 3)", flush=True)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "graph_upload.json"), "w") as fh:
        json.dump(res, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
