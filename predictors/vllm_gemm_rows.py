"""GEMM profile rows for vLLM's own shapes, from a real recording of vLLM's kernels aligned with an emulated
trace of the same workload.

The recording (integrations/record.py over predictors/calibration/vllm_workload.py on a real H200, e.g.
data/h200/vllm_kernels_2026-11-30/kernels.parquet) has every GPU kernel of the recorded phases, but cuBLAS's
kernels (nvjet_sm90_*, sometimes followed by cublasLt's splitKreduce_kernel) carry no shapes: most run inside
CUDA-graph replays, where the profiler sees no operator. The emulated trace of the same workload
(`timewarp run --trace FILE -- python vllm_workload.py ...`) has the shapes (args.gemm {m, n, k, batch, ta, tb,
a, ...}, the cuBLAS call the emulator annotated) but no real durations. Both runs execute the same sequence of
engine steps, and in every step the same GEMMs in the same order (per layer qkv, o_proj, gate_up, down; then
lm_head), so the i-th GEMM of a step in one is the i-th GEMM of the matching step in the other.

Alignment:
  1. Steps. Every model forward starts with Inductor's fused embedding + first RMSNorm kernel
     (triton_red_fused__to_copy_embedding_rms_norm_0), once per engine step, in both runs; its grid_x is the
     step's (padded) token count. A step is the kernels from one such launch to the next. The emulated trace
     also has the steps of engine start and warm-up (profile run, compile, capture, warm-up generates) before
     the recorded window; the two sequences of per-step signatures (embedding grid_x, GEMM count) are aligned
     with difflib's longest-matching-blocks (equivalently, from the end when nothing differs) and only steps
     inside matching blocks are used.
  2. GEMMs. In a matched step, the real GEMMs are the nvjet_* kernels in start order, each with the
     splitKreduce_kernel that immediately follows it on the same stream, if any; the emulated GEMMs are the
     trace events with args.gemm, in ts order. A step is used only if both have the same number of GEMMs.
  3. Keys. The emulated annotation becomes the key of profile_build.py's `gemm` rows: (a_type, ta, tb, M, K,
     N, batch) = (a, ta, tb, m, k, n, max(batch, 1)), cuBLAS's view, as the C core's gemm_predict looks it up
     (F.linear(x[T, k], w[n_out, k]) -> ta=1, tb=0, M=n_out, K=k, N=T).
  4. Per key, over its occurrences (medians):
       ns       the real kernel time: nvjet dur + splitKreduce dur;
       slot_ns  the real per-call cost on the stream: from the nvjet kernel's start to the start of the next GPU
                activity on the same stream, over the occurrences where that one follows back-to-back (within
                BACK_TO_BACK_NS of the GEMM's end; all but a few dozen of ~69k), i.e. kernel time plus the
                device-side launch gaps inside and after the GEMM. The microbenchmark rows profile_build.py
                writes are graph-replay times per call (gaps included) and the C core adds nothing to a GEMM's
                row, so slot_ns is the figure to put in profile.tsv's `gemm` rows; ns is kept for reference.
                (Where no occurrence is back-to-back, slot_ns = ns + kgap per kernel, kgap from profile.tsv.)

Output CSV columns: a_type, ta, tb, M, K, N, batch, ns, count, source_phase (the workload phases the
occurrences came from, ';'-joined), then slot_ns, slot_count (occurrences with a back-to-back successor),
n_kernels (1, or 2 with a split-K reduce), kernel (the nvjet kernel; kernel_share: its share of the
occurrences, 1.0 throughout in the 2026-11-30 data), ns_p10 / ns_p90, emu_ns / emu_layer (the emulator's
current prediction for the key, median of the trace's dur, and the profile layer it came from: exact, interp,
nearest), held_out (the split below) and after_ns (what the C core would predict from this table's fitted rows
alone: exact, or gemm_predict's log-log interpolation over N within the family; empty where it would have to
extrapolate), full_slot_ns (the slot at full clock: the median over occurrences of each one's slot over the power
cap's factor on it, shim_c/core/power.c's model replayed over the recording by power_model.py; what
profile_build.py writes) and capped_share (the share of occurrences the replay found capped). The report on stdout: the keys and families, per key real vs emulated now (and, for held-out
keys, after), error summaries, GEMM time per decode step (phase decode), and totals per phase and layer.

Held-out policy (profile_build.py's GEMM rule, per (a_type, ta, tb, M, K, batch) family): N that is one of
profile_build's GEMM_TOKENS is held out at its odd positions there (the microbenchmark split, so a token count
held out of one source is held out of the other); other N are held out at the odd positions of the family's
sorted list of N; the family's smallest and largest N are always fitted, since a held-out end point could only
be extrapolated (the largest is 8192, vLLM's token budget, the most frequent large GEMM of prefill and mixed
steps). profile_build's HELD_OUT_SHAPES are not held out wholesale: vLLM's down projection (M, K) =
(4096, 14336) is one of them, and it is the family these rows most need to fix (the C core has no row of it
and predicts it from the "nearest" layer). The microbenchmark's held-out (4096, 14336) rows stay out of the
fit and then check these rows instead of the nearest layer. Where a key is in both sources, use this table's
row for vLLM (same kernels, measured inside vLLM's own graphs; they differ by up to ~10% from the
microbenchmark's, see the report).

    python predictors/vllm_gemm_rows.py [RECORDING_DIR] [EMULATED_TRACE] [OUT_CSV]

Defaults: data/h200/vllm_kernels_2026-11-30, /tmp/gal/trace.json, RECORDING_DIR/gemm_rows.csv. The trace
(the full phases, not --quick, so that the same cases run as in the recording; ~10 min on a 2-core machine;
REPO is the checkout):
    cd /tmp && HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 timewarp run --trace /tmp/gal/trace.json -- \\
        python REPO/predictors/calibration/vllm_workload.py --model REPO/integrations/models/llama3-8b-shape
"""
from __future__ import annotations

import collections
import difflib
import json
import pathlib
import statistics
import sys

HERE = pathlib.Path(__file__).resolve().parent
if __package__:
    from . import profile_build as pb
else:   # run by path: python predictors/vllm_gemm_rows.py
    sys.path.insert(0, str(HERE))
    import profile_build as pb
DEFAULT_REC = HERE / "data" / "h200" / "vllm_kernels_2026-11-30"
DEFAULT_TRACE = pathlib.Path("/tmp/gal/trace.json")
STEP_KERNEL = "triton_red_fused__to_copy_embedding_rms_norm_0"
KGAP_DEFAULT_NS = 928.0
BACK_TO_BACK_NS = 3000.0
LAYERS = {0: "none", 1: "exact", 2: "interp", 3: "nearest", 4: "roofline"}


def _case(stack) -> str:
    """The innermost 'phase:NAME|...' label of a kernel's label_stack (JSON list), or ''."""
    if not isinstance(stack, str):
        return ""
    try:
        labels = json.loads(stack) if stack.startswith("[") else [stack]
    except ValueError:
        return ""
    return next((x for x in reversed(labels) if x.startswith("phase:") and "|" in x), "")


def real_steps(rec_dir: pathlib.Path):
    """[(signature, case, [[nvjet name, ns, n_kernels, slot ns or None, start ns], ...])] per engine step of the
    recording. ns: the nvjet kernel's dur plus that of the splitKreduce_kernel right after it on the same
    stream; slot: from the nvjet kernel's start to the start of the next GPU activity on that stream, when
    that one follows back-to-back (starts within BACK_TO_BACK_NS of the GEMM's end), else None."""
    import pandas as pd

    k = pd.read_parquet(rec_dir / "kernels.parquet",
                        columns=["kind", "name", "grid_x", "stream", "start_ns", "dur_ns", "label_stack"])
    k = k.sort_values("start_ns", kind="stable")
    steps, cur = [], None
    open_gemm = {}          # stream -> [row, end_ns] of the GEMM whose reduce / successor is still to come
    for kind, name, gx, stream, start, dur, stack in zip(k.kind, k.name, k.grid_x, k.stream, k.start_ns,
                                                        k.dur_ns, k.label_stack):
        start, dur = float(start), float(dur)
        og = open_gemm.pop(stream, None)
        if og is not None and kind == "kernel" and "splitKreduce_kernel" in name and og[0][2] == 1:
            og[0][1] += dur
            og[0][2] += 1
            open_gemm[stream] = [og[0], start + dur]
            continue
        if og is not None and start - og[1] <= BACK_TO_BACK_NS:
            og[0][3] = start - og[0][4]
        if kind != "kernel":
            continue
        if name == STEP_KERNEL:
            cur = [int(gx), _case(stack), []]
            steps.append(cur)
        elif cur is not None and name.startswith("nvjet"):
            row = [name, dur, 1, None, start]
            cur[2].append(row)
            open_gemm[stream] = [row, start + dur]
    return [((gx, len(g)), case, [r[:5] for r in g]) for gx, case, g in steps]


def emulated_steps(trace: pathlib.Path):
    """[(signature, [(key, predicted ns, layer), ...])] per engine step of the emulated trace."""
    ev = json.loads(trace.read_text())
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    ev = [e for e in ev if e.get("ph") == "X"]
    ev.sort(key=lambda e: (e.get("pid", 0), e["ts"]))
    steps, cur = [], None
    for e in ev:
        a = e.get("args") or {}
        if e.get("name") == STEP_KERNEL:
            cur = [int(a.get("grid", [0])[0]), []]
            steps.append(cur)
            continue
        g = a.get("gemm")
        if g is None or cur is None:
            continue
        key = (int(g["a"]), int(g["ta"]), int(g["tb"]), int(g["m"]), int(g["k"]), int(g["n"]),
               max(int(g["batch"]), 1))
        cur[1].append((key, float(e["dur"]) * 1e3, a.get("layer", "")))
    return [((gx, len(g)), g) for gx, g in steps]


def align(real, emu):
    """Pairs (real step index, emulated step index) inside difflib's matching blocks of the signatures."""
    sm = difflib.SequenceMatcher(a=[s[0] for s in real], b=[s[0] for s in emu], autojunk=False)
    pairs = []
    for b in sm.get_matching_blocks():
        pairs += [(b.a + i, b.b + i) for i in range(b.size)]
    return pairs


def held_out(n: int, family_ns: list[int]) -> bool:
    """The split (module docstring): profile_build.is_held_out("vgemm") for N at its rank in its family."""
    ns = sorted(family_ns)
    row = collections.namedtuple("VgemmRow", "N pos last")(n, ns.index(n), len(ns) - 1)
    return pb.is_held_out("vgemm", row)


def lerp_log(x0, y0, x1, y1, x):
    """shim_c/core/profile.c's interpolation over N (log-log)."""
    import math
    if x1 == x0:
        return y0
    t = (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0))
    return math.exp(math.log(y0) + t * (math.log(y1) - math.log(y0)))


def kgap_ns() -> float:
    p = HERE / "data" / "h200" / "profile.tsv"
    try:
        for line in p.read_text().splitlines():
            if line.startswith("kgap\t"):
                return float(line.split("\t")[1])
    except OSError:
        pass
    return KGAP_DEFAULT_NS


def _q(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def occurrences(rec_dir: pathlib.Path, trace: pathlib.Path) -> tuple[list[dict], dict]:
    """(every GEMM of the matched steps, the alignment's counts). A GEMM: its key, real ns (with its split-K
    reduce), n_kernels, nvjet name, slot, start, the emulated prediction and layer, step index and case. The
    counts: real_steps, emu_steps, unmatched (aligned pairs unusable), per_step (per matched step: case,
    tokens, real GEMMs, emulated GEMMs)."""
    real, emu = real_steps(rec_dir), emulated_steps(trace)
    out, per_step, unmatched = [], [], 0
    for ri, ei in align(real, emu):
        (_, rn), case, rg = real[ri]
        (_, en), eg = emu[ei]
        if rn != en or not case:
            unmatched += 1
            continue
        for (name, ns, nk, slot, start), (key, ens, layer) in zip(rg, eg):
            out.append(dict(key=key, ns=ns, n_kernels=nk, name=name, slot=slot, start=int(start), emu_ns=ens,
                            layer=layer, step=ri, case=case))
        per_step.append((case, real[ri][0][0], rg, eg))
    return out, dict(real_steps=len(real), emu_steps=len(emu), unmatched=unmatched, per_step=per_step)


def full_clock_ns():
    """f(key) -> ns or None: what a GEMM takes at full clock, from profile_build's microbenchmark rows
    (GEMM_SRC, each timed after a cool-down): the key's own row, or log-log interpolated over N between two
    rows of its family"""
    import pandas as pd

    fam = collections.defaultdict(list)
    for r in pb._gemm_rows(pd, pb.GEMM_SRC).itertuples():
        k = pb.gemm_key(r)
        fam[k[:5] + k[6:]].append((k[5], r.t_median_us * 1e3))

    def ns(key):
        pts = sorted(fam.get(key[:5] + key[6:], []))
        return next((lerp_log(n0, t0, n1, t1, key[5]) for (n0, t0), (n1, t1) in zip(pts, pts[1:])
                     if n0 <= key[5] <= n1), None)
    return ns


def build(rec_dir: pathlib.Path, trace: pathlib.Path, out: pathlib.Path) -> dict:
    from timewarp.predictors import power_model

    every, counts = occurrences(rec_dir, trace)
    unmatched, per_step = counts["unmatched"], counts["per_step"]
    # the power cap's factor on each occurrence: the emulator's model replayed over the recording
    factor = power_model.replay(rec_dir, {o["start"]: power_model.gemm_u(o["key"], o["ns"]) for o in every})
    gap = kgap_ns()
    occ = collections.defaultdict(list)     # key -> [(ns, n_kernels, nvjet name, emu ns, layer, phase, slot, factor)]
    for o in every:
        phase = o["case"].split("|")[0].removeprefix("phase:")
        occ[o["key"]].append((o["ns"], o["n_kernels"], o["name"], o["emu_ns"], o["layer"], phase, o["slot"],
                              factor.get(o["start"], 1.0)))

    rows = []
    for key, o in occ.items():
        ns = statistics.median(x[0] for x in o)
        names = collections.Counter(x[2] for x in o)
        top, top_n = names.most_common(1)[0]
        nk = collections.Counter(x[1] for x in o).most_common(1)[0][0]
        slots = [x[6] for x in o if x[6] is not None]
        slot = statistics.median(slots) if slots else statistics.median(x[0] + gap * x[1] for x in o)
        # at full clock: each occurrence's slot (or time plus the gaps) over the cap's factor on it
        full = statistics.median((x[6] if x[6] is not None else x[0] + gap * x[1]) / x[7] for x in o)
        rows.append(dict(zip(("a_type", "ta", "tb", "M", "K", "N", "batch"), key),
                         ns=ns, slot_ns=slot, full_slot_ns=full, capped_share=sum(x[7] > 1 for x in o) / len(o),
                         slot_count=len(slots), count=len(o),
                         source_phase=";".join(sorted({x[5] for x in o})), n_kernels=nk, kernel=top,
                         kernel_share=top_n / len(o), ns_p10=_q([x[0] for x in o], 0.1),
                         ns_p90=_q([x[0] for x in o], 0.9), emu_ns=statistics.median(x[3] for x in o),
                         emu_layer=collections.Counter(x[4] for x in o).most_common(1)[0][0]))
    fam = collections.defaultdict(list)
    for r in rows:
        fam[(r["a_type"], r["ta"], r["tb"], r["M"], r["K"], r["batch"])].append(r["N"])
    for r in rows:
        r["held_out"] = int(held_out(r["N"], fam[(r["a_type"], r["ta"], r["tb"], r["M"], r["K"], r["batch"])]))
    rows.sort(key=lambda r: (r["a_type"], r["ta"], r["tb"], r["M"], r["K"], r["batch"], r["N"]))
    # what the C core would predict from the fitted rows alone (exact, else interpolation over N within the
    # family, as gemm_predict does): the held-out rows' expected error once these rows are in the table
    for r in rows:
        fit = [x for x in rows if not x["held_out"] and
               all(x[c] == r[c] for c in ("a_type", "ta", "tb", "M", "K", "batch"))]
        same = [x for x in fit if x["N"] == r["N"]]
        lo = max((x for x in fit if x["N"] < r["N"]), key=lambda x: x["N"], default=None)
        hi = min((x for x in fit if x["N"] > r["N"]), key=lambda x: x["N"], default=None)
        r["after_ns"] = (same[0]["slot_ns"] if same else
                         lerp_log(lo["N"], lo["slot_ns"], hi["N"], hi["slot_ns"], r["N"]) if lo and hi else None)

    cols = ["a_type", "ta", "tb", "M", "K", "N", "batch", "ns", "count", "source_phase", "slot_ns", "slot_count",
            "n_kernels",
            "kernel", "kernel_share", "ns_p10", "ns_p90", "emu_ns", "emu_layer", "held_out", "after_ns",
            "full_slot_ns", "capped_share"]
    lines = [",".join(cols)]
    for r in rows:
        vals = []
        for c in cols:
            v = r[c]
            vals.append("" if v is None else
                        f"{v:.0f}" if c in ("ns", "slot_ns", "ns_p10", "ns_p90", "emu_ns", "after_ns",
                                            "full_slot_ns") else
                        f"{v:.3f}" if c in ("kernel_share", "capped_share") else str(v))
        lines.append(",".join(vals))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    return dict(real_steps=counts["real_steps"], emu_steps=counts["emu_steps"], matched_steps=len(per_step),
                unmatched_pairs=unmatched, kgap_ns=gap, rows=rows, occ=occ, per_step=per_step)


def report(res: dict) -> None:
    rows = res["rows"]
    print(f"steps: {res['real_steps']} recorded, {res['emu_steps']} emulated, {res['matched_steps']} matched "
          f"({res['unmatched_pairs']} aligned but unusable); kgap {res['kgap_ns']:.0f} ns")
    fam = collections.defaultdict(list)
    for r in rows:
        fam[(r["a_type"], r["ta"], r["tb"], r["M"], r["K"], r["batch"])].append(r)
    print(f"{len(rows)} keys in {len(fam)} (a_type, ta, tb, M, K, batch) families; "
          f"{sum(r['held_out'] for r in rows)} held out")
    for f, rs in sorted(fam.items()):
        print(f"  family a={f[0]} ta={f[1]} tb={f[2]} M={f[3]} K={f[4]} batch={f[5]}: N = "
              f"{','.join(str(r['N']) for r in rs)}")
    print("\nper key: real kernel time (ns), real slot (slot_ns), the emulator's prediction now (emu_ns, its "
          "layer) and its error vs slot_ns; after: held-out rows predicted from the fitted rows (interpolation "
          "over N), error vs slot_ns")
    print(f"{'M':>6} {'K':>6} {'N':>5} {'cnt':>5} {'real_ns':>9} {'slot_ns':>9} {'emu_ns':>9} {'err%':>7} "
          f"{'layer':>8} ho {'after%':>7} nk phases / kernel")
    for r in rows:
        err = (r["emu_ns"] / r["slot_ns"] - 1) * 100
        aft = f"{(r['after_ns'] / r['slot_ns'] - 1) * 100:+7.1f}" if r["held_out"] and r["after_ns"] else " " * 7
        print(f"{r['M']:>6} {r['K']:>6} {r['N']:>5} {r['count']:>5} {r['ns']:>9.0f} {r['slot_ns']:>9.0f} "
              f"{r['emu_ns']:>9.0f} {err:>+7.1f} {r['emu_layer']:>8} {r['held_out']:>2} {aft} {r['n_kernels']:>2} "
              f"{r['source_phase']} {r['kernel']} ({r['kernel_share']:.2f})")

    def med_abs(xs):
        return statistics.median(abs(x) for x in xs) if xs else float("nan")
    print("\nerrors per key vs slot_ns (median |err|, median err), now and after (held-out rows, predicted from "
          "the fitted ones):")
    for label, sel in (("all keys", rows), ("fitted keys", [r for r in rows if not r["held_out"]]),
                       ("held-out keys", [r for r in rows if r["held_out"]])):
        now = [(r["emu_ns"] / r["slot_ns"] - 1) * 100 for r in sel]
        print(f"  {label:<14} n={len(sel):>3}  now {med_abs(now):5.1f}% ({statistics.median(now):+5.1f}%)", end="")
        if label == "held-out keys":
            aft = [(r["after_ns"] / r["slot_ns"] - 1) * 100 for r in sel if r["after_ns"]]
            print(f"  after {med_abs(aft):5.1f}% ({statistics.median(aft):+5.1f}%), max |err| "
                  f"{max(abs(x) for x in aft):.1f}%", end="")
        print()
    for f, rs in sorted(fam.items()):
        now = [(r["emu_ns"] / r["slot_ns"] - 1) * 100 for r in rs]
        aft = [(r["after_ns"] / r["slot_ns"] - 1) * 100 for r in rs if r["held_out"] and r["after_ns"]]
        print(f"  M={f[3]:>6} K={f[4]:>5}: now median |err| {med_abs(now):5.1f}% ({statistics.median(now):+5.1f}%), "
              f"held-out after {med_abs(aft):5.1f}%; layers now "
              f"{dict(collections.Counter(r['emu_layer'] for r in rs))}")
    # totals over every matched occurrence, per phase and prediction layer
    extra = {(r["a_type"], r["ta"], r["tb"], r["M"], r["K"], r["N"], r["batch"]): r["slot_ns"] - r["ns"] for r in rows}
    tot = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    for key, o in res["occ"].items():
        for ns, nk, _, ens, layer, phase, slot, _f in o:
            for t in (tot[("all", "all")], tot[(phase, "all")], tot[("all", layer)]):
                t[0] += ns; t[1] += slot if slot is not None else ns + extra[key]; t[2] += ens; t[3] += 1
    # per engine step, the decode phase's steps after the first of each case (uniform decode batches,
    # FULL CUDA-graph replays): median over the case's steps of the sum of its GEMMs
    by_case = collections.defaultdict(list)
    for case, gx, rg, eg in res["per_step"]:
        if case.startswith("phase:decode|") and gx <= 512:
            key_of = [k for k, _, _ in eg]
            slot = sum(r[3] if r[3] is not None else r[1] + extra[k] for r, k in zip(rg, key_of))
            by_case[(case, gx)].append((sum(r[1] for r in rg), slot, sum(e[1] for e in eg)))
    print("\nper decode step (phase decode, uniform steps), GEMMs only, median over the steps of the case:")
    print(f"  {'case':<34} {'tokens':>6} {'steps':>5} {'real_us':>9} {'slot_us':>9} {'emu_us':>9} {'err%':>7}")
    for (case, gx), v in sorted(by_case.items(), key=lambda kv: kv[0][1]):
        if len(v) < 3:
            continue
        ns, slot, ens = (statistics.median(x[i] for x in v) for i in range(3))
        print(f"  {case:<34} {gx:>6} {len(v):>5} {ns / 1e3:>9.1f} {slot / 1e3:>9.1f} {ens / 1e3:>9.1f} "
              f"{(ens / slot - 1) * 100:>+7.1f}")
    print("\ntotals over matched GEMM occurrences: real kernel time (ns), real slot (slot_ns; where not "
          "back-to-back, ns + the key's median slot_ns - ns), emulated; error of emulated vs each:")
    for (ph, layer), (ns, slot, ens, n) in sorted(tot.items()):
        print(f"  phase={ph:<11} layer={layer:<8} n={n:>6} real {ns / 1e6:9.2f} ms  slot {slot / 1e6:9.2f} ms"
              f"  emulated {ens / 1e6:9.2f} ms  err {(ens / ns - 1) * 100:+6.1f}% / {(ens / slot - 1) * 100:+6.1f}%")


if __name__ == "__main__":
    rec = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_REC
    trace = pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else DEFAULT_TRACE
    out = pathlib.Path(sys.argv[3]) if len(sys.argv) > 3 else rec / "gemm_rows.csv"
    res = build(rec, trace, out)
    report(res)
    print(f"\n{len(res['rows'])} rows -> {out}")
