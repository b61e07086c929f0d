"""The host CPU of vLLM's forwards outside CUDA graphs, by the step's scheduled tokens, per run.

vLLM 0.24 captures CUDA graphs up to 512 tokens; a larger step runs the torch.compile'd model eagerly, its
Inductor kernels launched one by one from Python, so its forward costs the host tens of milliseconds. Its
timeline (integrations/vllm_plugin/timeline.py) records `model.forward` only for those steps, with the
thread's CPU time; the step's token count comes from the `sched.schedule` event before it. Real runs and
emulated runs print side by side, with the real host's `host_speed.json` where the run has one. Each band
gives the forwards' median thread CPU and median wall time: under emulation the runtime's per-call costs
(launch, cuBLAS, attention: profile.tsv's host rows) move the clock but are not thread CPU, so there the wall
time is the figure to hold against a real host's CPU; on the real host a launch that waits for a queue slot
spins, so there CPU counts that wait (compare steps whose GPU work is shorter than their launches).

    python -m timewarp.predictors.vllm_forward_host predictors/data/h200/vllm_2026-12-05b /tmp/emulated_run ...
"""
from __future__ import annotations

import argparse
import bisect
import json
import re
import statistics
from pathlib import Path

from .compare_vllm_timeline import load

BANDS = ((513, 900), (900, 1300), (1300, 2200), (2200, 4200), (4200, 8193))


def parts(detail: str) -> dict[str, tuple[int, float, float]]:
    """A forward's parts, where its timeline was written with TIMEWARP_VLLM_TIMELINE_PARTS=1
    (integrations/vllm_plugin/timeline.py): kind -> (calls, wall ms, thread CPU ms)."""
    return {m.group(1): (int(m.group(2)), int(m.group(3)) / 1e3, int(m.group(4)) / 1e3)
            for m in re.finditer(r"(\w+)=(\d+)/(\d+)/(\d+)", detail)}


def forwards(d: Path) -> dict[tuple[int, int], list[tuple[float, float, dict]]]:
    """(host CPU, wall, parts) in ms of each non-graph forward in d's cases, by band of the step's scheduled
    tokens."""
    ev, marks = load(d, ("sched.schedule", "model.forward"))
    t0 = min((m["start"] for m in marks.values() if "start" in m), default=0)  # after the engine's warm-up
    steps = [(s, int(m.group(1))) for s, _e, n, _t, det, _c in ev
             if n == "sched.schedule" and s >= t0 and (m := re.search(r"tokens=(\d+)", det))]
    starts = [s for s, _ in steps]
    out: dict[tuple[int, int], list[tuple[float, float, dict]]] = {b: [] for b in BANDS}
    for s, e, n, _t, det, cpu in ev:
        if n != "model.forward" or s < t0 or cpu < 0:
            continue
        i = bisect.bisect_right(starts, s) - 1
        if i < 0:
            continue
        for lo, hi in BANDS:
            if lo <= steps[i][1] < hi:
                out[(lo, hi)].append((cpu / 1e6, (e - s) / 1e6, parts(det)))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path,
                    help="run folders with timeline/ (and marks.txt; without it, an offline run, every forward counts)")
    a = ap.parse_args(argv)
    print("| run | host Python s | " + " | ".join(f"{lo}-{hi - 1} tokens: n, CPU / wall ms" for lo, hi in BANDS) + " |")
    print("|---|---|" + "---|" * len(BANDS))
    found = {}
    for d in a.runs:
        if not (d / "timeline").is_dir():
            print(f"| {d.name} | no timeline/ |")
            continue
        hs = d / "host_speed.json"
        py = f"{json.loads(hs.read_text())['cpu_s']['python']:.3f}" if hs.is_file() else "-"
        found[d.name] = fw = forwards(d)
        cells = [f"{len(v)}, {statistics.median(c for c, _, _ in v):.1f} / {statistics.median(w for _, w, _ in v):.1f}"
                 if v else "-" for v in fw.values()]
        print(f"| {d.name} | {py} | " + " | ".join(cells) + " |")
    # the parts of each band's forwards, where the timelines have them: median calls, wall and CPU per kind,
    # and what the forward spent outside them (the compiled model's own Python: the split graph's glue)
    for name, fw in found.items():
        rows = [(band, v) for band, v in fw.items() if v and v[0][2]]
        if not rows:
            continue
        kinds = list(rows[0][1][0][2])
        print(f"\n{name}: median per forward, calls / wall ms / CPU ms")
        print("| tokens | n | forward wall / CPU | " + " | ".join(kinds) + " | outside pieces and attn, wall |")
        print("|---|---|---|" + "---|" * (len(kinds) + 1))
        for (lo, hi), v in rows:
            med = lambda f: statistics.median(f(x) for x in v)
            cells = [f"{med(lambda x: x[2][k][0]):.0f} / {med(lambda x: x[2][k][1]):.2f} / {med(lambda x: x[2][k][2]):.2f}"
                     for k in kinds]
            rest = med(lambda x: x[1] - x[2].get("piece", (0, 0, 0))[1] - x[2].get("attn", (0, 0, 0))[1])
            print(f"| {lo}-{hi - 1} | {len(v)} | {med(lambda x: x[1]):.2f} / {med(lambda x: x[0]):.2f} | "
                  + " | ".join(cells) + f" | {rest:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
