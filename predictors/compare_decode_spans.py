"""The decode steps' GPU time of an emulated `vllm serve` run against every real server of the card that ran the
same cases, by the number of requests in the step.

    python -m timewarp.predictors.compare_decode_spans EMULATED_DIR [--card h200|h100] [--real DIR ...] [CASE ...]

EMULATED_DIR: integrations/bench/emulated_vllm_cases.sh's output with TIMEWARP_VLLM_TIMELINE=DIR/timeline. The real
side defaults to every committed server of the card with timelines (predictors/data/CARD/vllm_2026-*: the
Llama-3-8B shape with vLLM's defaults, real_vllm_baseline.sh TIMELINE=1). A decode-only step (every request
one token, no new request) is timed by the plugin's gpu.step (CUDA events around the step's work), so host
time is out of it. Per case and request count (the four counts the emulated run has most steps at): the
emulated median against the median and range of the servers' medians.

Why against many servers: one server's steps are one board's. Boards of one model differ (the H200's ten
servers of case 3 ran a 64-request step in 6.66-6.83 ms); a decode step compared with one profiler trace also
carries that run's own spread (the same-position steps of a profiled and an unprofiled case 3 on one server
differed by +1.0% on the H200 and -1.0% on the H100; docs/LIMITATIONS.md).
"""
from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from .compare_vllm_timeline import _fields, load

DATA = Path(__file__).resolve().parent / "data"
MIN_STEPS = 5   # a request count with fewer steps in a run is a transition, not a steady state


def spans_by_case(d: Path) -> dict[str, dict[int, list[float]]]:
    """{case: {requests: [GPU ms of each decode-only step]}} of every case in d's marks, its timelines read once."""
    ev, marks = load(d, ("sched.schedule", "gpu.step"))
    windows = [(c, m["start"], m["end"]) for c, m in marks.items() if "start" in m and "end" in m]
    out: dict[str, dict[int, list[float]]] = {c: {} for c, _, _ in windows}
    reqs = step_case = None
    for s, _e, name, _tid, detail, _cpu in ev:
        case = next((c for c, lo, hi in windows if lo <= s <= hi), None)
        if case is None:
            continue
        if name == "sched.schedule":
            f = _fields(detail)
            tokens, n = int(f.get("tokens", 0)), int(f.get("reqs", 0))
            reqs = n if n > 0 and tokens == n and f.get("new") == "0" else None
            step_case = case
        elif name == "gpu.step" and reqs and case == step_case:
            out[case].setdefault(reqs, []).append(float(detail.split("gpu_ms=")[1]))
            reqs = None
    return out


def decode_spans(d: Path, case: str) -> dict[int, list[float]] | None:
    """{requests: [GPU ms of each decode-only step]} of one case in d's timelines; None if d did not run it."""
    return spans_by_case(d).get(case)


# servers whose unprofiled cases ran after a profiler session in the same process: its graph replays are slower
# afterwards (data/h200/graph_nocupti_2026-12-04), so they are not a reference
AFTER_PROFILER = {"vllm_2026-12-07b"}


def real_dirs(card: str) -> list[Path]:
    return sorted(p for p in (DATA / card).glob("vllm_2026-*")
                  if (p / "timeline").is_dir() and p.name not in AFTER_PROFILER)


def compare(emulated: Path, reals: list[Path], cases: list[str] | None = None) -> list[dict]:
    """One row per (case, request count): emulated and real medians (ms), the servers' range and count. cases:
    caseK names (None: every case of the emulated run, in its marks' order)."""
    rows = []
    emulated_spans, real_spans = spans_by_case(emulated), [spans_by_case(d) for d in reals]
    for case in cases or [c for c in emulated_spans if c.startswith("case")]:
        emu = emulated_spans.get(case)
        if not emu:
            continue
        servers = [r[case] for r in real_spans if r.get(case)]
        top = sorted((k for k in emu if len(emu[k]) >= MIN_STEPS), key=lambda k: -len(emu[k]))[:4]
        for k in sorted(top):
            meds = [statistics.median(s[k]) for s in servers if len(s.get(k, ())) >= MIN_STEPS]
            if not meds:
                continue
            e, r = statistics.median(emu[k]), statistics.median(meds)
            rows.append({"case": case, "reqs": k, "steps": len(emu[k]), "emulated": e, "real": r,
                         "lo": min(meds), "hi": max(meds), "servers": len(meds), "error": e / r - 1})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m timewarp.predictors.compare_decode_spans", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("emulated", type=Path)
    ap.add_argument("cases", nargs="*", help="caseK names (default: every case of the emulated run)")
    ap.add_argument("--card", default="h200", help="the data folder of the real servers (h200, h100)")
    ap.add_argument("--real", type=Path, action="append", help="a real server's folder (repeatable)")
    a = ap.parse_args(argv)
    if not (a.emulated / "timeline").is_dir():
        ap.error(f"{a.emulated}: no timeline/ (run the cases with TIMEWARP_VLLM_TIMELINE={a.emulated}/timeline)")
    reals = a.real or real_dirs(a.card)
    if not reals:
        ap.error(f"no real servers with timelines under {DATA / a.card}")
    rows = compare(a.emulated, reals, a.cases or None)
    if not rows:
        print("no decode-only steps in common with the real servers")
        return 1
    print(f"{'case':8} {'reqs':>5} {'steps':>6} {'emulated ms':>12} {'real ms':>9} {'servers (range)':>24} "
          f"{'error':>7}")
    for r in rows:
        print(f"{r['case']:8} {r['reqs']:5d} {r['steps']:6d} {r['emulated']:12.3f} {r['real']:9.3f} "
              f"{r['servers']:4d} ({r['lo']:.3f}..{r['hi']:.3f}) {100 * r['error']:+6.1f}%")
    # per case, its most frequent request count: the case's steady state
    main_rows = [max((r for r in rows if r["case"] == c), key=lambda r: r["steps"])
                 for c in dict.fromkeys(r["case"] for r in rows)]
    errs = [r["error"] for r in main_rows]
    print(f"each case's most frequent count: mean error {100 * statistics.mean(errs):+.1f}%, "
          f"mean |error| {100 * statistics.mean(abs(x) for x in errs):.1f}% over {len(errs)} cases")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
