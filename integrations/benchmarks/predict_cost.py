"""Benchmark: what one kernel-duration prediction costs the launching thread, cached and on a miss.

    python -m timewarp.integrations.benchmarks.predict_cost [N] [--gpu H200]

Runs shim_c/core/predict_bench.c's tw_bench_predict under `timewarp run` (the profile and GPU of a real
run), for a GEMM, an attention, a copy and an unannotated kernel: N predictions of one launch (cached
lookups) and N predictions of N distinct launches (misses: the predictor's layers run, in C; Python is
never asked). Thread CPU time, with the virtual clock's charging paused."""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys

LAYERS = {0: "roofline", 1: "exact", 2: "interp", 3: "nearest", 4: "graph", 5: "step", 6: "sibling", 7: "config"}


def measure(n: int) -> list[tuple[str, float, float, str, str]]:
    """In a process under `timewarp run`: the table's rows."""
    lib = ctypes.CDLL("libtimewarp.so")          # already loaded by the launcher: the same handle
    lib.tw_bench_predict.argtypes = [ctypes.c_int, ctypes.c_long, ctypes.POINTER(ctypes.c_double), ctypes.c_int]
    lib.tw_bench_predict_family.restype = ctypes.c_char_p
    out = (ctypes.c_double * 32)()
    rows = lib.tw_bench_predict(0, n, out, 8)
    if rows < 0:
        raise RuntimeError("tw_bench_predict refused its arguments")
    return [(lib.tw_bench_predict_family(r).decode(), out[4 * r], out[4 * r + 1], LAYERS.get(int(out[4 * r + 2]), "?"),
             LAYERS.get(int(out[4 * r + 3]), "?")) for r in range(rows)]


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["--inner"]:
        for fam, hit, miss, hl, ml in measure(int(args[1])):
            print(f"{fam:<10} {hit:>10.1f} {hl:>10} {miss:>10.1f} {ml:>10}", flush=True)
        return
    gpu = "H200"
    if "--gpu" in args:
        i = args.index("--gpu")
        gpu = args[i + 1]
        del args[i:i + 2]
    n = args[0] if args else "200000"
    print(f"prediction cost on {gpu}, {n} calls each (ns of thread CPU per call; target: cached <= 200 ns)")
    print(f"{'family':<10} {'cached ns':>10} {'layer':>10} {'miss ns':>10} {'layer':>10}")
    sys.stdout.flush()
    env = dict(os.environ, PYTHONSAFEPATH="1")
    r = subprocess.run([sys.executable, "-m", "timewarp", "run", "--gpu", gpu, "--", sys.executable, "-m",
                        "timewarp.integrations.benchmarks.predict_cost", "--inner", n], env=env)
    sys.exit(r.returncode)


if __name__ == "__main__":
    main()
