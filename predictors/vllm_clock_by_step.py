"""The H200's SM clock under each engine step of a real `vllm serve` run: nvml_sampler.py's samples joined
with integrations/vllm_plugin/timeline.py's steps (both on CLOCK_MONOTONIC).

    python -m timewarp.predictors.vllm_clock_by_step predictors/data/h200/vllm_nvml_2026-12-04

DIR holds nvml.csv(.gz), marks.txt and timeline/ (h200_vllm_session.sh with TIMELINE=1 NVML=1). Per case: the
clock and power over the case, the share of samples the driver flagged as power-capped, and per step kind
(decode-only; steps with up to 2048 new tokens; more) the median over steps of the mean clock during the step's
GPU span (gpu.step: from the execute start, gpu_ms long).
"""
from __future__ import annotations

import bisect
import csv
import gzip
import io
import pathlib
import statistics as st
import sys


def _text(p: pathlib.Path) -> str:
    return gzip.decompress(p.read_bytes()).decode() if p.suffix == ".gz" else p.read_text()


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    d = pathlib.Path(argv[0])
    src = next((p for p in (d / "nvml.csv.gz", d / "nvml.csv") if p.exists()), None)
    if src is None:
        print(f"{d}: no nvml.csv(.gz)", file=sys.stderr)
        return 2
    rows = list(csv.DictReader(io.StringIO(_text(src))))
    t = [int(r["mono_ns"]) for r in rows]
    clock = [int(r["sm_mhz"]) for r in rows]
    power = [int(r["power_mw"]) / 1e3 for r in rows]
    capped = [int(r["reasons"], 16) & 0x4 for r in rows]
    marks: dict[str, dict[str, int]] = {}
    for line in (d / "marks.txt").read_text().splitlines():
        name, what, ns = line.split()[:3]
        marks.setdefault(name, {})[what] = int(ns)
    events = []
    for f in sorted((d / "timeline").glob("timeline-*")):
        for line in _text(f).splitlines():
            p = line.split("\t")
            if p[0] in ("sched.schedule", "gpu.step"):
                events.append((int(p[1]), p[0], p[4]))
    events.sort()

    def window(a: int, b: int) -> slice:
        return slice(bisect.bisect_left(t, a), bisect.bisect_right(t, b))

    for case, m in marks.items():
        if "start" not in m or "end" not in m:
            continue
        w = window(m["start"], m["end"])
        if not clock[w]:
            continue
        print(f"{case}: SM clock median {st.median(clock[w])} MHz, min {min(clock[w])}; power median "
              f"{st.median(power[w]):.0f} W, max {max(power[w]):.0f}; power-capped samples "
              f"{sum(1 for c in capped[w] if c) / len(capped[w]):.0%}")
        kinds: dict[str, list[float]] = {}
        sched = None
        for t0, name, detail in events:
            if not m["start"] <= t0 <= m["end"]:
                continue
            if name == "sched.schedule":
                sched = dict(x.split("=") for x in detail.split())
                continue
            if sched is None:
                continue
            s = window(t0, t0 + int(float(detail.split("=")[1]) * 1e6))
            if not clock[s]:
                continue
            new = int(sched["tokens"]) - (int(sched["reqs"]) - int(sched["new"]))
            kind = "decode-only" if int(sched["new"]) == 0 else ("<= 2048 new" if new <= 2048 else "> 2048 new")
            kinds.setdefault(kind, []).append(st.mean(clock[s]))
        for kind, v in sorted(kinds.items()):
            print(f"  {kind:12s} {len(v):4d} steps: mean clock median {st.median(v):.0f} MHz, "
                  f"p10 {sorted(v)[len(v) // 10]:.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
