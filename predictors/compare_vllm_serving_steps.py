"""The decode steps of a real `vllm serve` (its own torch profiler) against an emulated run, kernel family by
family: where the emulator's time per step goes wrong in serving, beyond the offline recording.

    python -m timewarp.predictors.compare_vllm_serving_steps REAL.csv.gz EMULATED_TRACE TOKENS

REAL.csv.gz: predictors/calibration/profile_kernels.py's table of a profiled case (real_vllm_baseline.sh
PROFILE_CASES, e.g. data/h200/vllm_2026-11-30e/prof_kernels_case3.csv.gz: 30 steady-state steps of case 3).
EMULATED_TRACE: `timewarp run --trace FILE -- integrations/bench/emulated_vllm_cases.sh DIR "K ..."` of the same
case (a killed engine core's trace is its last snapshot, taken every 20 s: run a short case after it). TOKENS:
the decode steps compared, by their token count (the step kernel's grid x, the CUDA-graph size: the case's
concurrency once every request decodes). Steps, families and the step kernel are compare_vllm_steps.py's.
Per family: the median over steps of the summed durations (the emulator's include its device launch gap,
the recording's do not: compare the interval, first step kernel to the next, for the step as a whole).
"""
from __future__ import annotations

import csv
import gzip
import pathlib
import statistics
import sys

HERE = pathlib.Path(__file__).resolve().parent
if __package__:
    from . import compare_vllm_steps as cs
else:
    sys.path.insert(0, str(HERE))
    import compare_vllm_steps as cs


def real_activity(path: pathlib.Path):
    acts = []
    with gzip.open(path, "rt") as f:
        for r in csv.DictReader(f):
            is_step = r["cat"] == "kernel" and cs.is_step_kernel(r["name"])
            gx = int(r["grid"].split("x")[0]) if is_step and r["grid"] else 0
            fam = cs.family(r["name"]) if r["cat"] == "kernel" else "other"
            acts.append((float(r["ts_us"]) * 1e3, float(r["dur_us"]) * 1e3, fam, is_step, gx,
                         cs.kernel_key(r["name"], fam, "kernel" if r["cat"] == "kernel" else r["cat"])))
    acts.sort(key=lambda a: a[0])
    return cs._segment(acts)


def decode_steps(steps, tokens: int):
    """(interval, step_stats) of each step of `tokens` tokens that has a next step."""
    out = []
    for (gx, acts), (_, nxt) in zip(steps, steps[1:]):
        if gx == tokens:
            out.append((nxt[0][0] - acts[0][0], cs.step_stats(acts, nxt[0][0])))
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    tokens = int(argv[2])
    real = decode_steps(real_activity(pathlib.Path(argv[0])), tokens)
    emu = decode_steps(cs.emulated_activity(pathlib.Path(argv[1])), tokens)
    if not real or not emu:
        print(f"no steps of {tokens} tokens: {len(real)} real, {len(emu)} emulated", file=sys.stderr)
        return 1
    med = statistics.median
    ri, ei = med(r[0] for r in real), med(e[0] for e in emu)
    print(f"steps of {tokens} tokens: {len(real)} real, {len(emu)} emulated")
    print(f"{'':10} {'real us':>10} {'emu us':>10} {'error':>8} {'of step':>8}  launches real/emu")
    print(f"{'interval':10} {ri / 1e3:10.1f} {ei / 1e3:10.1f} {100 * (ei / ri - 1):+7.1f}%")
    for f in cs.FAMILIES:
        r, e = med(x[1]["fam"][f] for x in real), med(x[1]["fam"][f] for x in emu)
        rn, en = med(x[1]["cnt"][f] for x in real), med(x[1]["cnt"][f] for x in emu)
        err = f"{100 * (e / r - 1):+7.1f}%" if r else "       -"
        print(f"{f:10} {r / 1e3:10.1f} {e / 1e3:10.1f} {err} {100 * (e - r) / ri:+7.2f}%  {rn:.0f}/{en:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
