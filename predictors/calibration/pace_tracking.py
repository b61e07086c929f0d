"""Does the host pace's probe follow the speed of longer Python work on the same CPU at the same moment?

Why: the pace (coordinator/pace.py) prices every CPU ns of an emulated program by TARGET_US over a short, warm
probe's time. Between two emulated vLLM runs of the same cases the pace moved x0.63 to x0.49 while the
processes' CPU for the same work stayed within 2-11% (docs/LIMITATIONS.md, "Kernel time"): either the probe
over-reacts or the work did not see the state the probe saw. This samples, per CPU in turn (pinned, as the
pace process does), three things back to back: the pace's warm probe (timed_probe), the same probe cold (its
first run after a sleep, as a serving process runs after the others had the CPU), and a longer piece of mixed
Python (about 2 ms: JSON, dicts, regular expressions, small objects, formatting). Run it beside an emulated
run (the load the pace sees) or alone; it prints, over windows of WINDOW_S, the medians of each and the slope
of log(work) against log(probe) across windows: 1 where the probe tracks the work, 0 where it is noise to it.

    python predictors/calibration/pace_tracking.py [--seconds 120] [--out FILE.jsonl]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import sys
import time
from pathlib import Path

WINDOW_S = 5.0

_WORD = re.compile(r"\w+|[^\w\s]")


class _Req:
    __slots__ = ("rid", "prompt", "n", "params")

    def __init__(self, rid: int, prompt: str, n: int):
        self.rid, self.prompt, self.n, self.params = rid, prompt, n, {"temperature": 0.0, "max_tokens": n}


def work() -> None:
    """About 2 ms of the kinds of Python a serving front end runs."""
    reqs = [_Req(i, f"prompt {i} " * 20, 128 + i) for i in range(200)]
    body = {"id": "cmpl", "choices": [{"index": r.rid, "text": r.prompt[:40], "logprobs": None} for r in reqs]}
    for _ in range(3):
        json.loads(json.dumps(body))
    by_len: dict[int, list[_Req]] = {}
    for r in reqs:
        by_len.setdefault(r.n % 17, []).append(r)
    words = sum(len(_WORD.findall(r.prompt)) for r in reqs[:60])
    lines = [f"{r.rid}:{r.n}:{r.params['max_tokens']}:{words}" for r in reqs]
    ",".join(sorted(lines))


def _thread_us(f) -> float:
    t = time.thread_time_ns()
    f()
    return (time.thread_time_ns() - t) / 1e3


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=120.0)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root))
    from coordinator import pace
    cpus = sorted(os.sched_getaffinity(0))
    rows = []
    t0 = time.monotonic()
    while time.monotonic() - t0 < a.seconds:
        for c in cpus:
            os.sched_setaffinity(0, {c})
            time.sleep(0.01)             # the others have the CPU meanwhile
            cold = _thread_us(pace.probe)
            warm = pace.timed_probe()
            w = _thread_us(work)
            rows.append({"t": round(time.monotonic() - t0, 3), "cpu": c, "probe_warm_us": round(warm, 1),
                         "probe_cold_us": round(cold, 1), "work_us": round(w, 1)})
    os.sched_setaffinity(0, set(cpus))
    if a.out:
        a.out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    wins: dict[int, list[dict]] = {}
    for r in rows:
        wins.setdefault(int(r["t"] // WINDOW_S), []).append(r)
    med = [{k: statistics.median(r[k] for r in rs) for k in ("probe_warm_us", "probe_cold_us", "work_us")}
           for _, rs in sorted(wins.items()) if len(rs) >= 10]
    print(f"{len(rows)} samples, {len(med)} windows of {WINDOW_S:g} s")
    print("window medians, us: warm probe / cold probe / work")
    for m in med:
        print(f"  {m['probe_warm_us']:8.1f} {m['probe_cold_us']:8.1f} {m['work_us']:8.1f}")

    def slope(x: str, y: str) -> float:
        xs = [math.log(m[x]) for m in med]
        ys = [math.log(m[y]) for m in med]
        mx, my = statistics.fmean(xs), statistics.fmean(ys)
        sxx = sum((v - mx) ** 2 for v in xs)
        return sum((u - mx) * (v - my) for u, v in zip(xs, ys)) / sxx if sxx else float("nan")

    if len(med) >= 3:
        for x in ("probe_warm_us", "probe_cold_us"):
            xs = [m[x] for m in med]
            print(f"log(work) on log({x}): slope {slope(x, 'work_us'):.2f} (the probe's windows span "
                  f"{min(xs):.0f}-{max(xs):.0f} us; work {min(m['work_us'] for m in med):.0f}-"
                  f"{max(m['work_us'] for m in med):.0f} us)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
