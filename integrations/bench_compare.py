"""Real H200 versus emulated `vllm bench serve` results, case by case (issue 5's accuracy table).

    python -m timewarp.integrations.bench_compare EMULATED_DIR [EMULATED_DIR ...] [--real DIR ...]

EMULATED_DIR is what integrations/bench/emulated_vllm_cases.sh wrote (caseK.json, wall.txt); the real
results default to the committed H200 run of all six cases on one server, in order, on the lease that also
measured the host-speed reference (predictors/data/h200/vllm_2026-11-30b; cases 1-4 are the issue's table,
5-6 held out: no fit used their lengths or concurrencies; 5 and 6 partly hit the prefix cache filled by the
earlier cases, on the real card as in the emulation). Errors are (emulated - real) / real. Speed is virtual
seconds of benchmark per wall second of emulation. With several emulated runs, a last table gives each
error's mean and range over them (emulated runs are not yet deterministic).
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "predictors" / "data" / "h200"
REAL_DIRS = [DATA / "vllm_2026-11-30b"]
METRICS = [("mean_ttft_ms", "TTFT ms"), ("mean_tpot_ms", "TPOT ms"), ("output_throughput", "out tok/s")]


def load_cases(d: Path) -> dict[int, dict]:
    out = {}
    for f in sorted(d.glob("case*.json")):
        m = re.fullmatch(r"case(\d+)\.json", f.name)
        if m:
            out[int(m.group(1))] = json.loads(f.read_text())
    return out


def wall_times(d: Path) -> dict[int, float]:
    out = {}
    try:
        for line in (d / "wall.txt").read_text().splitlines():
            m = re.match(r"case(\d+) rc=0 ([0-9.]+) s wall", line)
            if m:
                out[int(m.group(1))] = float(m.group(2))
    except OSError:
        pass
    return out


def compare(emulated: Path, real_dirs: list[Path]) -> list[str]:
    real: dict[int, dict] = {}
    for d in real_dirs:
        real.update(load_cases(d))
    emu, wall = load_cases(emulated), wall_times(emulated)
    head = "| case | C | in | out | N | " + " | ".join(f"{n} real | emulated | err" for _, n in METRICS) + " | speed |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for k in sorted(set(real) & set(emu)):
        r, e = real[k], emu[k]
        n = r.get("num_prompts")
        cells = [str(k), str(r.get("max_concurrency")), str(round(r["total_input_tokens"] / n)),
                 str(round(r["total_output_tokens"] / n)), str(n)]
        for key, _ in METRICS:
            rv, ev = r[key], e[key]
            cells += [f"{rv:.2f}", f"{ev:.2f}", f"{(ev - rv) / rv * 100:+.1f}%"]
        cells.append(f"{e['duration'] / wall[k]:.2f}x" if k in wall else "?")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def spread(emulated: list[Path], real_dirs: list[Path]) -> list[str]:
    real: dict[int, dict] = {}
    for d in real_dirs:
        real.update(load_cases(d))
    runs = [load_cases(d) for d in emulated]
    head = "| case | " + " | ".join(f"{n} err mean | range" for _, n in METRICS) + " |"
    lines = [f"over {len(runs)} emulated runs", head, "|" + "---|" * (head.count("|") - 1)]
    for k in sorted(real):
        if not all(k in r for r in runs):
            continue
        cells = [str(k)]
        for key, _ in METRICS:
            errs = [(r[k][key] - real[k][key]) / real[k][key] * 100 for r in runs]
            cells += [f"{sum(errs) / len(errs):+.1f}%", f"{min(errs):+.1f}% .. {max(errs):+.1f}%"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description="real H200 vs emulated vllm bench serve results")
    ap.add_argument("emulated", nargs="+", type=Path, help="output folders of emulated_vllm_cases.sh")
    ap.add_argument("--real", nargs="+", type=Path, default=REAL_DIRS, help="real result folders")
    a = ap.parse_args(argv)
    for d in a.emulated:
        print(f"{d}:")
        print("\n".join(compare(d, a.real)))
    if len(a.emulated) > 1:
        print("\n".join(spread(a.emulated, a.real)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
