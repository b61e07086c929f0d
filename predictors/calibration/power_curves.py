"""How each power_dynamics.py experiment slowed over time, one card beside another: per experiment, the median
launch duration in windows after the start, over the experiment's first launches (full clock).

    python predictors/calibration/power_curves.py A.json [B.json ...]

A.json, B.json: power_dynamics.py's output (e.g. predictors/data/h200/power_2026-11-30/power_dynamics.json and
an H100's); experiments present in several files are printed one under the other. What power.c's FIRST, LATER
and onset stand for, per card.
"""
import json
import statistics
import sys

WINDOWS_MS = [(0, 30), (30, 60), (60, 100), (100, 300), (300, 1000), (1000, 3000)]


def curve(exp: dict) -> tuple[float, list[str]]:
    t, d = exp["t_ms"], exp["dur_ms"]
    full = statistics.median(d[:3])
    cells = []
    for lo, hi in WINDOWS_MS:
        w = [x for s, x in zip(t, d) if lo <= s < hi]
        cells.append(f"{statistics.median(w) / full:6.3f}" if w else "     -")
    return full, cells


def experiments(run: dict) -> dict:
    """a power_dynamics.py output's experiments with enough launches for a curve"""
    return {k: v for k, v in run.items() if isinstance(v, dict) and len(v.get("dur_ms", [])) >= 10}


def main(paths: list[str]) -> int:
    if not paths:
        print(__doc__, file=sys.stderr)
        return 2
    runs = []
    for p in paths:
        with open(p) as f:
            run = json.load(f)
        runs.append((run.get("gpu", p), experiments(run)))
    names = list(dict.fromkeys(k for _, exps in runs for k in exps))
    print(f"{'experiment':18} {'card':24} {'full ms':>8} " + " ".join(f"{f'{a}-{b}':>6}" for a, b in WINDOWS_MS))
    for n in names:
        for card, exps in runs:
            if n in exps:
                full, cells = curve(exps[n])
                print(f"{n:18} {card[:24]:24} {full:8.4f} " + " ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
