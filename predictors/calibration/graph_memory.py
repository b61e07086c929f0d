"""Device memory the CUDA driver takes for executable graphs, by kernel nodes and graph count (real GPU).

    python predictors/calibration/graph_memory.py OUT.json

Why: vLLM sizes its KV cache from cudaMemGetInfo after capturing its CUDA graphs (gpu_worker.py's
profile_cudagraph_memory, and the pool it reports after capture). On the H200 a 64-layer model's graphs took
1.02 GiB there, the emulator's 0.47 (vllm_32b_2026-12-03a): the difference is what the driver allocates
for each instantiated graph, which torch's caching allocator does not see. This measures it: G graphs of
N kernel nodes each (a one-element add, so that the nodes' work and torch's pool stay tiny), free memory
before capture, after capture (torch instantiates at the end of capture), after the first replay (upload),
and after the graphs are destroyed.
"""
import gc
import json
import sys

import torch


def free_bytes() -> int:
    torch.cuda.synchronize()
    return torch.cuda.mem_get_info()[0]


def trial(graphs: int, nodes: int) -> dict:
    x = torch.zeros(1, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        x.add_(1)                        # warm the kernel outside capture
    torch.cuda.current_stream().wait_stream(s)
    pool = torch.cuda.graph_pool_handle()
    f0 = free_bytes()
    gs = []
    for _ in range(graphs):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, pool=pool):
            for _ in range(nodes):
                x.add_(1)
        gs.append(g)
    f1 = free_bytes()
    for g in gs:
        g.replay()
    f2 = free_bytes()
    del gs, g
    gc.collect()
    torch.cuda.synchronize()
    f3 = free_bytes()
    torch.cuda.empty_cache()
    f4 = free_bytes()
    return {"graphs": graphs, "nodes": nodes, "captured_b": f0 - f1, "replayed_b": f0 - f2,
            "destroyed_b": f0 - f3, "emptied_b": f0 - f4}


def main() -> int:
    out = sys.argv[1]
    torch.ones(1, device="cuda")
    rows = []
    for graphs, nodes in [(1, 1), (1, 16), (1, 256), (1, 1024), (1, 4096), (1, 16384),
                          (10, 1), (10, 16), (10, 256), (100, 1), (100, 16), (100, 64), (1000, 12), (3000, 12),
                          (50, 800), (2, 8192)]:
        r = trial(graphs, nodes)
        rows.append(r)
        print(json.dumps(r), flush=True)
    p = torch.cuda.get_device_properties(0)
    res = {"gpu": p.name, "torch": torch.__version__, "cuda": torch.version.cuda, "rows": rows}
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
