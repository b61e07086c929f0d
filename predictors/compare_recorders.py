"""Do the recorder's rows carry the emulator's keys? Compare a real run's launches.parquet (`timewarp record
--shim`) with an emulated run's trace of the same program (`timewarp run --trace`): GEMM calls by their
annotation (m, n, k, batch, A's type, transposes), other kernels by (demangled name, grid, block: the
profile's key; mangled names of kernels in anonymous namespaces differ between two builds of PyTorch), copies by
(bytes, direction), memsets by bytes. Prints, per family, how many distinct keys each side has and how many
both, then the measured against the predicted time per matched key.

    python -m timewarp.predictors.compare_recorders OUT/launches.parquet TRACE.json
"""
from __future__ import annotations

import json
import statistics
import sys

from ..integrations import record_shim
from .demangle import demangler

GEMM_KEY = ["m", "n", "k", "batch", "a_type", "trans_a", "trans_b"]
demangle = demangler()
COPY_DIR = {1: "HtoD", 2: "DtoH", 8: "DtoD", 10: "PtoP"}


def real_keys(path: str) -> dict:
    """{(family, key): [durations in us]}: GEMM calls summed over their kernels (record_shim.per_call)."""
    import pandas as pd

    df = record_shim.per_call(pd.read_parquet(path))
    out: dict = {}
    k = df[df.kind == "kernel"]
    for r in k[k.m.notna()].itertuples():
        out.setdefault(("gemm", tuple(int(getattr(r, c)) for c in GEMM_KEY)), []).append(r.dur_ns / 1e3)
    k = k[k.m.isna()]
    for r in k.itertuples():
        key = (demangle(r.name), (r.grid_x, r.grid_y, r.grid_z), (r.block_x, r.block_y, r.block_z))
        out.setdefault(("kernel", key), []).append(r.dur_ns / 1e3)
    for r in df[df.kind == "memcpy"].itertuples():
        out.setdefault(("memcpy", (int(r.bytes), COPY_DIR.get(int(r.copy_kind), str(r.copy_kind)))), []).append(r.dur_ns / 1e3)
    for r in df[df.kind == "memset"].itertuples():
        out.setdefault(("memset", int(r.bytes)), []).append(r.dur_ns / 1e3)
    return out


def emulated_keys(path: str) -> dict:
    events = json.loads(open(path).read())
    events = events["traceEvents"] if isinstance(events, dict) else events
    out: dict = {}
    for e in events:
        a = e.get("args") or {}
        if e.get("ph") != "X" or "layer" not in a:
            continue
        if "gemm" in a:
            g = a["gemm"]
            key = ("gemm", (g["m"], g["n"], g["k"], g["batch"], g["a"], g["ta"], g["tb"]))
        elif e["name"] in ("Memcpy HtoD", "Memcpy DtoH", "Memcpy DtoD", "Memcpy PtoP") or e["name"].startswith("Memcpy"):
            key = ("memcpy", (int(a.get("bytes", 0)), e["name"].split()[-1]))
        elif e["name"] == "Memset":
            key = ("memset", int(a.get("bytes", 0)))
        elif "grid" in a:
            key = ("kernel", (demangle(e["name"]), tuple(a["grid"]), tuple(a["block"])))
        else:
            continue
        out.setdefault(key, []).append(e["dur"])
    return out


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    real, emu = real_keys(argv[0]), emulated_keys(argv[1])
    print(f"{'family':8s} {'real keys':>9s} {'emulated':>9s} {'both':>5s}")
    for fam in ("gemm", "kernel", "memcpy", "memset"):
        r = {k for k in real if k[0] == fam}
        e = {k for k in emu if k[0] == fam}
        print(f"{fam:8s} {len(r):9d} {len(e):9d} {len(r & e):5d}")
        for k in sorted(r - e, key=str)[:8]:
            print(f"   only real:     {str(k[1])[:150]}")
        for k in sorted(e - r, key=str)[:8]:
            print(f"   only emulated: {str(k[1])[:150]}")
    print("\nmatched keys: real median us, emulated median us, error")
    for k in sorted(set(real) & set(emu), key=str):
        rm, em = statistics.median(real[k]), statistics.median(emu[k])
        print(f"  {k[0]:7s} {str(k[1])[:110]:110s} {rm:10.2f} {em:10.2f} {(em - rm) / rm * 100:+7.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
