"""Real versus emulated offline `vllm bench latency` (integrations/bench/vllm_latency_cases.sh), case by case.

    python -m timewarp.integrations.latency_compare EMULATED_DIR REAL_DIR [REAL_DIR ...]

Each folder holds latency_B_I_O.json (vLLM's output: avg_latency and the timed iterations' latencies, s).
Per case: the real mean of avg_latency over the real folders that have it (their range shown), the emulated
one, the error (emulated - real) / real, and the spread of the iterations on each side (max / min). One
iteration is a whole LLM.generate of B prompts (prefill, then O - 1 decode steps), so with O >> 1 it measures
the decode steps of a batch of B at contexts from I to I + O.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path


def load(d: Path) -> dict[tuple[int, int, int], dict]:
    out = {}
    for f in sorted(d.glob("latency_*.json")):
        m = re.fullmatch(r"latency_(\d+)_(\d+)_(\d+)\.json", f.name)
        if m:
            try:
                out[tuple(int(x) for x in m.groups())] = json.loads(f.read_text())
            except (OSError, json.JSONDecodeError) as e:
                raise SystemExit(f"latency_compare: {f}: not a `vllm bench latency` result ({e})")
    return out


def _spread(res: dict) -> str:
    """The slowest timed iteration over the fastest."""
    lat = res.get("latencies") or [res["avg_latency"]]
    return f"{max(lat) / min(lat):.3f}"


def table(emulated: Path, real_dirs: list[Path]) -> list[str]:
    emu = load(emulated)
    reals = [load(d) for d in real_dirs]
    lines = ["| batch | in | out | latency s real (runs) | emulated | err | per output token ms real | emulated "
             "| iterations max/min real | emulated |", "|" + "---|" * 10]
    for key in sorted(emu):
        runs = [r[key] for r in reals if key in r]
        if not runs:
            continue
        rv = [r["avg_latency"] for r in runs]
        real = sum(rv) / len(rv)
        e = emu[key]["avg_latency"]
        span = f" ({min(rv):.4g}..{max(rv):.4g})" if len(rv) > 1 else ""
        out = key[2]
        lines.append(f"| {key[0]} | {key[1]} | {out} | {real:.4f}{span} | {e:.4f} | {(e - real) / real * 100:+.1f}% | "
                     f"{real / out * 1e3:.3f} | {e / out * 1e3:.3f} | {_spread(runs[0])} | {_spread(emu[key])} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    dirs = [Path(a) for a in argv]
    for d in dirs:
        if not d.is_dir():
            print(f"latency_compare: {d}: no such folder", file=sys.stderr)
            return 2
    lines = table(dirs[0], dirs[1:])
    if len(lines) == 2:
        print(f"latency_compare: no case in {dirs[0]} has a real run in {', '.join(map(str, dirs[1:]))}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
