"""Per-step accuracy of the emulator against a real vLLM recording of the same workload.

Inputs: a recording of predictors/calibration/vllm_workload.py on the real GPU (integrations/record.py's
kernels.parquet, e.g. data/h200/vllm_kernels_2026-11-30) and an emulated Chrome trace of the same workload
(`timewarp run --trace FILE -- python vllm_workload.py --model ...`, the full phases, as in vllm_gemm_rows.py's
docstring).

Steps: a step starts at Inductor's fused embedding + RMSNorm kernel (is_step_kernel: its name grows with fp8
quantisation fused in) and runs to the next one; the two step sequences are aligned on their token counts
(the step kernel's grid_x) with difflib's matching blocks, which drops the emulated trace's engine-start /
warm-up steps. The case of a step is the innermost 'phase:NAME|B=..|in=..|out=..' label of the real step
kernel ('|rep=..' dropped). The last step of each run (no next step) is not compared.

Per matched step:
  sum   GPU time: the sum of the durations of every GPU activity (kernels, memcpy, memset; all streams) that
        starts in [this step's STEP_KERNEL start, next step's STEP_KERNEL start).
  span  from the first start to the last end of those activities (includes device idle within the step, i.e.
        launch gaps and host-bound waits; the last step of each case is left out of the span statistics, its
        window holding the host's idle time before the next case).
  error emulated / real - 1.
Regime of a step: in phases decode and decode_ctx, 'dec' when its token count (the embedding kernel's grid_x,
the padded batch) is <= the case's B (uniform decode batches, FULL CUDA-graph replays) and 'pf' otherwise (the
case's prefill / chunked-prefill steps); 'pf' in phase prefill, 'mix' in phase mixed.

Kernel families (by name, the trace's demangled as kineto does; matched by substring):
  GEMM      cuBLAS (nvjet_*, splitKreduce_kernel, gemv and dot kernels), vLLM's CUTLASS scaled_mm (real);
            cublas::gemm events / args.gemm (emulated; one event per cuBLAS call whose dur is the profile's
            per-call slot, i.e. device launch gaps included)
  MoE       vLLM's fused_moe_kernel and its routing kernels (vllm::moe::...)
  FA3       FlashAttnFwdSm90 (main); FA3comb: FlashAttnFwdCombine
  Triton    Inductor's triton_* kernels and vLLM's own Triton kernels (_xxx_kernel: slot mappings, sampling, ...)
  other     everything else: reshape_and_cache_flash, FA3's prepare_varlen_num_blocks, aten kernels, memcpy,
            memset
The breakdown tables (one representative case per phase) give, per family, the mean over the case's steps of
the real and emulated time and the family's contribution to the step error ((emu - real) / real step sum,
contributions add up to the step's mean error), plus the real / emulated activity counts per step; then
span - sum (device idle inside the step; negative where activities overlap on two streams) and the mean span,
both without the case's last step.

    python -m timewarp.predictors.compare_vllm_steps [RECORDING_DIR] [EMULATED_TRACE] [--csv PER_STEP_CSV]
        [--kernels N]    # per representative case, the N kernels whose time per step differs most
"""
from __future__ import annotations

import argparse
import collections
import difflib
import json
import pathlib
import statistics
import sys

HERE = pathlib.Path(__file__).resolve().parent
if __package__:
    from . import vllm_gemm_rows as vg
    from .demangle import demangler
else:
    sys.path.insert(0, str(HERE))
    import vllm_gemm_rows as vg
    from demangle import demangler

FAMILIES = ("GEMM", "MoE", "FA3", "FA3comb", "Triton", "other")
REPRESENTATIVE = (   # (title, case, regime)
    ("decode B=1", "phase:decode|B=1|in=64|out=16", "dec"),
    ("decode B=64", "phase:decode|B=64|in=64|out=16", "dec"),
    ("decode_ctx B=32 in=2048", "phase:decode_ctx|B=32|in=2048|out=16", "dec"),
    ("prefill in=2048", "phase:prefill|B=1|in=2048|out=1", "pf"),
    ("mixed 64x2048", "phase:mixed|B=64|in=2048|out=16", "mix"),
)
GEMM_NAMES = ("nvjet", "splitKreduce", "cublas::gemm", "cublasLt::matmul", "dot_kernel", "gemv", "cutlass_3x_gemm")


def family(name: str, gemm: bool = False) -> str:
    # vLLM's fused MoE kernel (its emulated launch carries a GEMM annotation) and its routing kernels
    if "fused_moe_kernel" in name or "vllm::moe::" in name or "4vllm3moe" in name:
        return "MoE"
    if gemm or any(g in name for g in GEMM_NAMES):
        return "GEMM"
    if "FlashAttnFwdCombine" in name:
        return "FA3comb"
    if "FlashAttnFwdSm90" in name:
        return "FA3"
    if name.startswith("triton_") or (name.startswith("_") and not name.startswith("_Z")
                                      and name.endswith("_kernel")):
        return "Triton"
    return "other"


def is_step_kernel(name: str) -> bool:
    """Inductor's fused embedding + RMSNorm kernel, the first of every step (vllm_gemm_rows.STEP_KERNEL in a
    bf16 model; with fp8 linears the activation quantisation is fused in and the name grows)."""
    return name.startswith("triton_") and "embedding" in name and "rms_norm" in name


def _segment(acts):
    """acts: [(start_ns, dur_ns, family, is_step_kernel, grid_x)] sorted as the step finder sorts them ->
    [(grid_x, [acts of the step])], starting at each step kernel; activity before the first one is dropped."""
    steps = []
    for a in acts:
        if a[3]:
            steps.append((a[4], [a]))
        elif steps:
            steps[-1][1].append(a)
    return steps


def real_activity(rec_dir: pathlib.Path):
    """Steps of the recording (all GPU activity), in vllm_gemm_rows.real_steps's order, with their case."""
    import pandas as pd
    k = pd.read_parquet(rec_dir / "kernels.parquet",
                        columns=["kind", "name", "grid_x", "start_ns", "dur_ns", "label_stack"])
    k = k.sort_values("start_ns", kind="stable")
    acts, cases = [], []
    for kind, name, gx, start, dur, stack in zip(k.kind, k.name, k.grid_x, k.start_ns, k.dur_ns, k.label_stack):
        is_step = kind == "kernel" and is_step_kernel(name)
        fam = family(name) if kind == "kernel" else "other"
        acts.append((float(start), float(dur), fam, is_step, int(gx) if is_step else 0, kernel_key(name, fam, kind)))
        if is_step:
            cases.append(vg._case(stack))
    return _segment(acts), cases


def emulated_activity(trace: pathlib.Path):
    """Steps of the emulated trace (all 'X' events, every stream), in vllm_gemm_rows.emulated_steps's order."""
    ev = json.loads(trace.read_text())
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    ev = [e for e in ev if e.get("ph") == "X"]
    ev.sort(key=lambda e: (e.get("pid", 0), e["ts"]))
    acts, demangle = [], demangler()
    for e in ev:
        a = e.get("args") or {}
        name = demangle(e.get("name", ""))
        is_step = is_step_kernel(name)
        fam = family(name, "gemm" in a)
        kind = "memcpy" if name.startswith("Memcpy") else "memset" if name.startswith("Memset") else "kernel"
        acts.append((float(e["ts"]) * 1e3, float(e["dur"]) * 1e3, fam, is_step,
                     int(a.get("grid", [0])[0]) if is_step else 0, kernel_key(name, fam, kind)))
    return _segment(acts)


def kernel_key(name: str, fam: str, kind: str) -> str:
    """What a per-kernel table groups by: the demangled name (the recording's; the trace's demangled as kineto
    does), all GEMMs as one (the emulated trace has one event per cuBLAS call, the real one a kernel or two),
    and copies and fills by kind."""
    if kind != "kernel":
        return kind
    return "GEMM (all)" if fam == "GEMM" else name


def step_stats(acts, next_start):
    fam = dict.fromkeys(FAMILIES, 0.0)
    cnt = dict.fromkeys(FAMILIES, 0)
    per = collections.defaultdict(lambda: [0.0, 0])   # kernel key -> [ns, count]
    for s, d, f, _, _, key in acts:
        if s >= next_start:
            break
        fam[f] += d
        cnt[f] += 1
        per[key][0] += d
        per[key][1] += 1
    inside = [a for a in acts if a[0] < next_start]
    span = max(s + d for s, d, *_ in inside) - inside[0][0]
    return dict(sum=sum(fam.values()), span=span, fam=fam, cnt=cnt, per=dict(per))


def case_params(case: str) -> dict:
    parts = case.split("|")
    d = {"phase": parts[0].removeprefix("phase:")}
    for p in parts[1:]:
        k, _, v = p.partition("=")
        d[k] = int(v) if v.lstrip("-").isdigit() else v
    return d


def align(real, emu):
    """Pairs (real step index, emulated step index) inside difflib's matching blocks of the two sequences of
    step token counts (the step kernel's grid_x, the padded batch): the emulated trace's engine-start and
    warm-up steps drop out."""
    sm = difflib.SequenceMatcher(a=[s[0] for s in real], b=[s[0] for s in emu], autojunk=False)
    return [(b.a + i, b.b + i) for b in sm.get_matching_blocks() for i in range(b.size)]


def build(rec_dir: pathlib.Path, trace: pathlib.Path):
    ract, rcases = real_activity(rec_dir)
    eact = emulated_activity(trace)
    pairs = align(ract, eact)
    rows, skipped = [], collections.Counter()
    for ri, ei in pairs:
        if ri + 1 >= len(ract) or ei + 1 >= len(eact):
            skipped["last step"] += 1
            continue
        case = rcases[ri]
        if not case:
            skipped["no case label"] += 1
            continue
        ckey = case.split("|rep=")[0]
        p = case_params(ckey)
        gx = ract[ri][0]
        regime = ("mix" if p["phase"] == "mixed" else "pf" if p["phase"] == "prefill" else
                  "dec" if gx <= p.get("B", 0) else "pf")
        r = step_stats(ract[ri][1], ract[ri + 1][1][0][0])
        e = step_stats(eact[ei][1], eact[ei + 1][1][0][0])
        rows.append(dict(ri=ri, ei=ei, case=ckey, phase=p["phase"], regime=regime, tokens=gx,
                         last_of_case=rcases[ri + 1] != case, real=r, emu=e,
                         err_sum=e["sum"] / r["sum"] - 1, err_span=e["span"] / r["span"] - 1))
    return dict(rows=rows, skipped=skipped, n_real=len(ract), n_emu=len(eact), n_pairs=len(pairs),
                emu_first=min((ei for _, ei in pairs), default=0))


def _stats(errs):
    if not errs:
        return "      -       -        -"
    a = [abs(x) * 100 for x in errs]
    return f"{statistics.median(a):6.1f}% {vg._q(a, 0.9):6.1f}% {statistics.median(errs) * 100:+7.1f}%"


def _table_row(label, n, rs, ns):
    span_rows = [r for r in rs if not r["last_of_case"]]
    return (f"| {label} | {n} | {statistics.median(r['real']['sum'] for r in rs) / 1e3:,.0f} | "
            f"{statistics.median(r['emu']['sum'] for r in rs) / 1e3:,.0f} | "
            + " | ".join(_stats([r["err_sum"] for r in rs]).split()) + " | "
            + " | ".join(_stats([r["err_span"] for r in span_rows]).split()) + " |")


HDR = ("| {k} | steps | real sum us (med) | emu sum us (med) | sum med abs | sum p90 abs | sum signed med | "
       "span med abs | span p90 abs | span signed med |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")


def kernel_table(rs, n_top: int) -> None:
    """The n_top kernels (keys) whose mean time per step differs most between real and emulated."""
    n = len(rs)
    keys = {k for r in rs for w in ("real", "emu") for k in r[w]["per"]}
    tot_r = sum(r["real"]["sum"] for r in rs) / n

    def mean(w, k, i):
        return sum(r[w]["per"].get(k, (0, 0))[i] for r in rs) / n
    tab = sorted(((mean("emu", k, 0) - mean("real", k, 0), k) for k in keys), key=lambda x: -abs(x[0]))
    print("| kernel | real us | emu us | err | contrib | n real | n emu |\n|---|---:|---:|---:|---:|---:|---:|")
    for d, k in tab[:n_top]:
        fr, fe = mean("real", k, 0), mean("emu", k, 0)
        err = f"{(fe / fr - 1) * 100:+.0f}%" if fr else "-"
        name = k if len(k) <= 70 else k[:67] + "..."
        print(f"| `{name}` | {fr / 1e3:,.1f} | {fe / 1e3:,.1f} | {err} | {d / tot_r * 100:+.1f}% | "
              f"{mean('real', k, 1):.0f} | {mean('emu', k, 1):.0f} |")
    print()


def report(res, n_top: int = 0) -> None:
    rows = res["rows"]
    print(f"steps: {res['n_real']} recorded, {res['n_emu']} emulated (first aligned emulated step: "
          f"{res['emu_first']}), {res['n_pairs']} aligned, {len(rows)} compared; skipped "
          f"{dict(res['skipped']) or 'none'}\n")
    print("## Per phase / regime (error = emulated / real - 1; sum = GPU time of the step, span = first start to "
          "last end)\n")
    print(HDR.format(k="phase / regime"))
    order = {"decode": 0, "decode_ctx": 1, "prefill": 2, "mixed": 3}
    by = collections.defaultdict(list)
    for r in rows:
        by[(r["phase"], r["regime"])].append(r)
    for (ph, rg), rs in sorted(by.items(), key=lambda kv: (order.get(kv[0][0], 9), kv[0][1])):
        print(_table_row(f"{ph} / {rg}", len(rs), rs, None))
    print(_table_row("**all**", len(rows), rows, None))

    print("\n## Per case / regime\n")
    print(HDR.format(k="case / regime"))
    byc = collections.defaultdict(list)
    for r in rows:
        byc[(r["case"], r["regime"])].append(r)

    def ckey(kv):
        p = case_params(kv[0][0])
        return (order.get(p["phase"], 9), p.get("in", 0) if p["phase"] == "decode_ctx" else 0,
                p.get("B", 0), p.get("in", 0), kv[0][1])
    for (case, rg), rs in sorted(byc.items(), key=ckey):
        print(_table_row(f"{case.removeprefix('phase:')} / {rg}", len(rs), rs, None))

    print("\n## Error by kernel family, representative cases (means over the case's steps of that regime; "
          "contrib = (emu - real) / real step sum)\n")
    reps = [r for r in REPRESENTATIVE if (r[1], r[2]) in byc]
    if not reps:  # a recording of other cases (another model's): every decode case it has
        reps = [(c.removeprefix("phase:"), c, rg) for (c, rg) in sorted(byc, key=lambda k: ckey((k, None)))
                if rg == "dec"]
    for title, case, rg in reps:
        rs = byc[(case, rg)]
        n = len(rs)
        tot_r = sum(r["real"]["sum"] for r in rs) / n
        tot_e = sum(r["emu"]["sum"] for r in rs) / n
        print(f"**{title}** ({case.removeprefix('phase:')}, regime {rg}, {n} steps, tokens "
              f"{sorted({r['tokens'] for r in rs})}): real {tot_r / 1e3:,.1f} us, emulated {tot_e / 1e3:,.1f} us, "
              f"{(tot_e / tot_r - 1) * 100:+.1f}%\n")
        print("| family | real us | emu us | family err | contrib | n real | n emu |\n"
              "|---|---:|---:|---:|---:|---:|---:|")
        for f in FAMILIES:
            fr = sum(r["real"]["fam"][f] for r in rs) / n
            fe = sum(r["emu"]["fam"][f] for r in rs) / n
            cr = sum(r["real"]["cnt"][f] for r in rs) / n
            ce = sum(r["emu"]["cnt"][f] for r in rs) / n
            fer = f"{(fe / fr - 1) * 100:+.1f}%" if fr else "-"
            print(f"| {f} | {fr / 1e3:,.1f} | {fe / 1e3:,.1f} | {fer} | {(fe - fr) / tot_r * 100:+.1f}% | "
                  f"{cr:.0f} | {ce:.0f} |")
        sp = [r for r in rs if not r["last_of_case"]]
        if sp:
            ir = sum(r["real"]["span"] - r["real"]["sum"] for r in sp) / len(sp)
            ie = sum(r["emu"]["span"] - r["emu"]["sum"] for r in sp) / len(sp)
            sr = sum(r["real"]["span"] for r in sp) / len(sp)
            se = sum(r["emu"]["span"] for r in sp) / len(sp)
            print(f"| span - sum (idle) | {ir / 1e3:,.1f} | {ie / 1e3:,.1f} | | | | |\n"
                  f"| **span** ({len(sp)} steps) | {sr / 1e3:,.1f} | {se / 1e3:,.1f} | {(se / sr - 1) * 100:+.1f}% "
                  f"| | | |")
        print()
        if n_top:
            kernel_table(rs, n_top)


def write_csv(res, path: pathlib.Path) -> None:
    cols = ["ri", "ei", "case", "phase", "regime", "tokens", "last_of_case", "real_sum_ns", "emu_sum_ns",
            "real_span_ns", "emu_span_ns", "err_sum", "err_span"]
    cols += [f"{w}_{f}_ns" for f in FAMILIES for w in ("real", "emu")]
    lines = [",".join(cols)]
    for r in res["rows"]:
        v = [r["ri"], r["ei"], r["case"], r["phase"], r["regime"], r["tokens"], int(r["last_of_case"]),
             f"{r['real']['sum']:.0f}", f"{r['emu']['sum']:.0f}", f"{r['real']['span']:.0f}",
             f"{r['emu']['span']:.0f}", f"{r['err_sum']:.4f}", f"{r['err_span']:.4f}"]
        v += [f"{r[w]['fam'][f]:.0f}" for f in FAMILIES for w in ("real", "emu")]
        lines.append(",".join(str(x) for x in v))
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="per-step accuracy of the emulator vs a real vLLM recording")
    ap.add_argument("recording", nargs="?", type=pathlib.Path, default=vg.DEFAULT_REC)
    ap.add_argument("trace", nargs="?", type=pathlib.Path, default=vg.DEFAULT_TRACE)
    ap.add_argument("--csv", type=pathlib.Path, help="also write the per-step rows here")
    ap.add_argument("--kernels", type=int, default=0, metavar="N",
                    help="per representative case, also the N kernels whose time differs most")
    a = ap.parse_args()
    res = build(a.recording, a.trace)
    report(res, a.kernels)
    if a.csv:
        write_csv(res, a.csv)
        print(f"per-step rows -> {a.csv}")
