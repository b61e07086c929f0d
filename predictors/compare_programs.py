"""Whole programs, real H200 against emulated (issue 3, acceptance 2): run each program of a real lease's
record under `timewarp run` and print the figures side by side.

    python -m timewarp.predictors.compare_programs [--progs DIR] [--real DIR] [--repeat N]
    timewarp validate            (runs this after the microbenchmarks)

The programs (predictors/programs: unmodified PyTorch and transformers scripts) ship with the package.
The real figures are predictors/data/h200/programs_2026-11-30
(predictors/calibration/h200_programs_session.sh: real_hf_llama8b.json, programs.jsonl, demo.txt) and the same
script's later leases, programs_2026-12-01 (a slower host, with device_basics.py run four times and the
32-layer transformers program three), programs_2026-12-03 and -03b (two more hosts, the demo six times in
all); each figure's reference is the median of every run of the program (the
transformers program: nine 32-layer runs on five leases, with host_ops_2026-11-30/hf_llama8b.jsonl), because
the real host-bound figures moved by up to 75% between runs. (The 20-GEMM figure no longer takes the power
lease's runs: those timed the same GEMMs warm, and the program's first GEMM loads cuBLAS's kernel, about 3 ms
inside its events.) Each program runs --repeat times (default 1); the table shows medians and ranges, because
host-bound figures also move with this machine's load (docs/LIMITATIONS.md).
"""
from __future__ import annotations

import argparse
import json
import pathlib
import re
import statistics
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
REAL = HERE / "data" / "h200" / "programs_2026-11-30"
PROGRAMS = HERE / "programs"
REAL_PROGRAMS = {"H200": REAL, "H100": HERE / "data" / "h100" / "transfer_2026-12-05" / "programs"}

# (program and arguments, figure key in its JSON, label, what bounds it on the real machine)
FIGURES = [
    ("hf_llama8b.py", "prefill_ms_events", "HF Llama-3-8B prefill 512 tokens, events (ms)", "host+GPU"),
    ("hf_llama8b.py", "generate_ms_per_token", "HF generate() batch 1, per token (ms)", "host"),
    ("hf_llama8b.py", "generate_b8_ms_per_token", "HF generate() batch 8, per token (ms)", "host"),
    ("device_basics.py", "gemm20_event_ms", "20 GEMMs 8192^3, events (ms)", "GPU"),
    ("device_basics.py", "graph_replay10_ms", "CUDA graph, 10 replays (ms)", "GPU"),
    ("virtual_time.py 1.0", "perf_counter_s", "~1 s of GEMMs, perf_counter (s)", "GPU (power cap)"),
    ("compile_and_llama.py --generate", "compile_10_ms", "torch.compile'd fn, 10 calls (ms)", "host"),
    # the demo's prefill is eager: its launches keep the GPU waiting on the host (real 15.1-23.4 ms across hosts;
    # here six runs of one build gave 14.3-19.2 ms)
    ("demo", "prefill_ms", "demo prefill 512 tokens, events (ms)", "host+GPU"),
    ("demo", "decode_ms", "demo decode, per token (ms)", "host+GPU"),
    # host time per eager call (predictors/programs/host_ops.py; real: host_ops_2026-11-30, three runs)
    ("host_ops.py --quick", "add_m1", "host: eager add, 1x4096 bf16 (us)", "host"),
    ("host_ops.py --quick", "mean_m512", "host: eager mean, 512x4096 fp32 (us)", "host"),
    ("host_ops.py --quick", "cat_m8", "host: eager cat, 8x4096 bf16 (us)", "host"),
    ("host_ops.py --quick", "linear_m1_n4096", "host: eager linear 1x4096x4096 (us)", "host"),
    ("host_ops.py --quick", "linear_m512_n14336", "host: eager linear 512x4096x14336 (us)", "host"),
    ("host_ops.py --quick", "sdpa_prefill", "host: eager SDPA prefill 512 (us)", "host"),
    ("host_ops.py --quick", "compiled_fn", "host: torch.compile'd fn call (us)", "host"),
]


HOST_OPS = HERE / "data" / "h200" / "host_ops_2026-11-30"
# later leases of the same session script: 2026-12-01 (a slower host: host_speed factor 1.45, plus repeats),
# 2026-12-03 (the programs once, host_ops.py --quick three times), 2026-12-03b (the demo five times,
# host_ops.py once: the demo's decode took 11.6-15.5 ms per token there, 18.3 on the host of -03)
LATER = [HERE / "data" / "h200" / d for d in ("programs_2026-12-01", "programs_2026-12-03", "programs_2026-12-03b")]
HF_RUNS = [REAL / "hf32_repeat.jsonl", HOST_OPS / "hf_llama8b.jsonl"] + [
    d / f for d in LATER for f in ("real_hf_llama8b.json", "hf32_repeat.jsonl")]


def _json_lines(files) -> list[dict]:
    """The JSON objects of files, one a line (as the programs print their results)."""
    return [json.loads(x) for f in files for x in f.read_text().splitlines() if x.strip()]


def real_figures(real: pathlib.Path) -> dict:
    """{program: {figure: [values of the real runs]}}: every run in real's files (a lease's folder may hold
    several: real_hf_llama8b.jsonl beside .json, programs.jsonl's lines in any number, demo.txt's outputs one
    after another), and for the H200's reference (REAL) its later leases' too."""
    extra = LATER if real == REAL else []

    def files(first: str, *more: pathlib.Path) -> list[pathlib.Path]:
        """real's own first file, which must exist, then those of more that do"""
        return [real / first] + [f for f in more if f.exists()]

    hf = files("real_hf_llama8b.json", real / "real_hf_llama8b.jsonl", *(HF_RUNS if real == REAL else []))
    runs = [r for r in _json_lines(hf) if r.get("layers", 32) == 32]
    out = {"hf_llama8b.py": {k: [r[k] for r in runs if k in r] for k in runs[0]}}
    repeats = ("programs.jsonl", "device_basics_repeat.jsonl")
    for rec in _json_lines(files("programs.jsonl", real / repeats[1], *(d / f for d in extra for f in repeats))):
        for k, v in rec["result"].items():
            out.setdefault(rec["program"], {}).setdefault(k, []).append(v)
    out["demo"] = {}
    demos = ("demo.txt", "demo_repeat.txt")
    for f in files("demo.txt", real / demos[1], *(d / f for d in extra for f in demos)):
        for k, vs in parse_demo_runs(f.read_text()).items():
            out["demo"].setdefault(k, []).extend(vs)
    if real == REAL:
        runs = _json_lines(d / "host_ops.jsonl" for d in [HOST_OPS] + LATER if (d / "host_ops.jsonl").exists())
        if runs:
            out["host_ops.py --quick"] = {k: [r[k] for r in runs if k in r] for k in runs[0] if k != "torch"}
    return out


def parse_demo_runs(text: str) -> dict:
    """Each figure of every demo run in text (several runs' outputs one after another), in order."""
    runs = {"prefill_ms": [float(x) for x in re.findall(r"prefill \(.*?\):\s+([\d.]+) ms \(CUDA events\)", text)],
            "decode_ms": [float(x) for x in re.findall(r"decode\s+\(.*?\):\s+([\d.]+) ms/token \(CUDA events\)", text)]}
    if not runs["prefill_ms"] or len(runs["prefill_ms"]) != len(runs["decode_ms"]):
        raise ValueError(f"demo output not understood:\n{text[-2000:]}")
    return runs


def parse_demo(text: str) -> dict:
    """The figures of the first demo run in text."""
    return {k: v[0] for k, v in parse_demo_runs(text).items()}


def run_emulated(prog: str, progs: pathlib.Path, gpu: str = "H200") -> dict:
    if prog == "demo":
        cmd = [sys.executable, "-m", "timewarp", "demo", "--gpu", gpu]
    else:
        name, *args = prog.split()
        cmd = [sys.executable, "-m", "timewarp", "run", "--gpu", gpu, "--", sys.executable, str(progs / name), *args]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=progs)
    if p.returncode != 0:
        raise RuntimeError(f"{prog} failed under emulation (exit {p.returncode}):\n{p.stderr[-3000:]}")
    if prog == "demo":
        return parse_demo(p.stdout)
    lines = [line for line in p.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"{prog} printed no JSON result:\n{p.stdout[-2000:]}")
    return json.loads(lines[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--progs", type=pathlib.Path, default=PROGRAMS, help="folder of the programs (default: %(default)s)")
    ap.add_argument("--real", type=pathlib.Path, default=REAL)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--gpu", default="H200", help="the card emulated; --real must hold that card's record "
                    "(H100: predictors/data/h100/transfer_*/programs)")
    a = ap.parse_args(argv)
    if not (a.progs / "hf_llama8b.py").exists():
        ap.error(f"{a.progs} holds no hf_llama8b.py")
    print(format_table(compare(a.progs, a.real, a.repeat, a.gpu)))
    return 0


def compare(progs: pathlib.Path = None, real_dir: pathlib.Path = REAL, repeat: int = 1, gpu: str = "H200") -> list[tuple]:
    """(label, real values, emulated values, bound) per figure."""
    progs = progs or PROGRAMS
    real = real_figures(real_dir)
    emu: dict = {}
    figures = [f for f in FIGURES if f[0] in real]  # another GPU's record may lack some programs
    for prog in dict.fromkeys(p for p, *_ in figures):
        emu[prog] = [run_emulated(prog, progs, gpu) for _ in range(repeat)]
    return [(label, [float(x) for x in real[prog][key]], [float(e[key]) for e in emu[prog]], bound)
            for prog, key, label, bound in figures]


def format_table(rows: list[tuple]) -> str:
    def cell(vals):
        m = statistics.median(vals)
        return f"{m:.3f} ({min(vals):.3f}..{max(vals):.3f})" if len(vals) > 1 else f"{m:.3f}"
    lines = [f"{'program, figure':52s} {'real (range)':>26s} {'emulated (range)':>26s} {'error':>8s}  bound by"]
    for label, reals, vals, bound in rows:
        r, m = statistics.median(reals), statistics.median(vals)
        lines.append(f"{label:52s} {cell(reals):>26s} {cell(vals):>26s} {(m - r) / r * 100:+7.1f}%  {bound}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
