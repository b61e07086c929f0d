"""Real versus emulated vLLM serving loop, phase by phase (integrations/vllm_plugin/timeline.py's files).

    python -m timewarp.predictors.compare_vllm_timeline REAL_DIR EMULATED_DIR [CASE ...]

Each DIR holds timeline/timeline-PID.tsv and marks.txt (each case's start and end on the run's
CLOCK_MONOTONIC), as written by integrations/bench/real_vllm_baseline.sh on the H200 (TIMELINE=1) and
integrations/bench/emulated_vllm_cases.sh under timewarp (TIMEWARP_VLLM_TIMELINE=DIR/timeline).

Per case it prints the median duration of each phase of the engine's steps, split by step kind (steps that
start a prompt, "prefill"; steps that only decode, "decode"), the interval between steps, the API server's
input and output processing, and for concurrency 1 the chain of one request's first token: API input ->
first schedule -> the prefill's launch -> its sampling -> the first output in the API server; how many
requests missed an engine step after the API server had passed them on (missed_steps); and how fast bursts of
concurrent requests reached the API server (arrival_bursts); and how long each tokenization waited to start in
the API server's pool and for its result to be taken (tokenize_waits). A phase whose
emulated median is off says where the emulator's host or GPU time goes wrong.
"""
from __future__ import annotations

import gzip
import statistics
import sys
from pathlib import Path


def load(d: Path, names: tuple[str, ...] | None = None) -> tuple[list[tuple], dict[str, dict[str, int]]]:
    """The events of d's timelines, sorted (only those named in `names`, when given), and marks.txt's marks."""
    ev = []
    prefixes = tuple(n + "\t" for n in names) if names is not None else None
    for f in sorted((d / "timeline").glob("timeline-*.tsv*")):   # .tsv.gz: the committed real runs
        text = gzip.decompress(f.read_bytes()).decode() if f.suffix == ".gz" else f.read_text()
        for line in text.splitlines():
            if prefixes is not None and not line.startswith(prefixes):
                continue
            p = line.split("\t")
            if len(p) >= 5:  # name start end thread detail [cpu]
                ev.append((int(p[1]), int(p[2]), p[0], p[3], p[4], int(p[5]) if len(p) > 5 else -1))
    ev.sort()
    marks: dict[str, dict[str, int]] = {}
    mfile = d / "marks.txt"   # absent for an offline run (vllm_eager_profile.py): no cases, every event counts
    for line in (mfile.read_text().splitlines() if mfile.is_file() else ()):
        name, kind, t = line.split()
        marks.setdefault(name, {})[kind] = int(t)
    return ev, marks


EXECUTE_PARTS = ("runner.add", "runner.inputs", "runner.attn", "runner.attn_meta", "model.forward")


def phases(ev: list[tuple], t0: int, t1: int) -> dict[str, list[float]]:
    """Durations (ms) of each phase in [t0, t1], keyed 'phase/kind'."""
    out: dict[str, list[float]] = {}

    def add(key, ns, cpu=-1):
        out.setdefault(key, []).append(ns / 1e6)
        if cpu >= 0:  # the thread's CPU time in the call (timelines written since it was recorded)
            out.setdefault(key + " cpu", []).append(cpu / 1e6)

    kind, last_sched = None, None
    for s, e, name, _tid, detail, cpu in ev:
        if not t0 <= s <= t1:
            continue
        if name == "sched.schedule":
            if "tokens=0 " in detail:
                kind = None
                continue
            kind = "prefill" if " new=0 " not in detail or _chunked(detail) else "decode"
            if last_sched is not None:
                add(f"step interval/{kind}", s - last_sched)
            last_sched = s
            add(f"schedule/{kind}", e - s, cpu)
        elif name in ("runner.execute", "runner.sample") and kind:
            add(f"{name.split('.')[1]}/{kind}", e - s, cpu)
        elif name in EXECUTE_PARTS and kind:  # execute_model's parts (timelines since lease p)
            add(f"{name}/{kind}", e - s, cpu)
        elif name == "gpu.step" and kind:
            add(f"gpu span/{kind}", float(detail.split("gpu_ms=")[1]) * 1e6)
        elif name == "sched.update":
            add("update", e - s, cpu)
        elif name in ("api.inputs", "api.outputs"):
            add(name, e - s, cpu)
    return out


def _chunked(detail: str) -> bool:
    # a step with more tokens than requests carries prompt tokens (a chunk of a prompt begun earlier)
    f = _fields(detail)
    return int(f.get("tokens", 0)) > int(f.get("reqs", 0))


def _fields(detail: str) -> dict[str, str]:
    """A timeline event's detail, 'key=value key=value ...', as a dict"""
    return dict(kv.split("=", 1) for kv in detail.split() if "=" in kv)


def first_token_chain(ev: list[tuple], t0: int, t1: int) -> dict[str, list[float]]:
    """Concurrency 1: for each request, API input start -> ... -> first API output end (ms)."""
    w = [x for x in ev if t0 <= x[0] <= t1]
    ins = [i for i, x in enumerate(w) if x[2] == "api.inputs"]
    out: dict[str, list[float]] = {}
    for n, i in enumerate(ins):
        end = ins[n + 1] if n + 1 < len(ins) else len(w)
        seg = w[i:end]
        try:
            sc = next(x for x in seg if x[2] == "sched.schedule" and " new=1 " in x[4])
            ex = next(x for x in seg if x[2] == "runner.execute" and x[0] >= sc[0])
            sa = next(x for x in seg if x[2] == "runner.sample" and x[0] >= ex[1])
            ou = next(x for x in seg if x[2] == "api.outputs" and x[0] >= sa[1])
        except StopIteration:
            continue
        x = seg[0]
        for key, ns in (("input", x[1] - x[0]), ("input->schedule", sc[0] - x[1]),
                        ("schedule", sc[1] - sc[0]), ("prefill launch", ex[1] - ex[0]),
                        ("prefill sample", sa[1] - sa[0]), ("sample->output", ou[0] - sa[1]),
                        ("output", ou[1] - ou[0]), ("input->first output", ou[1] - x[0])):
            out.setdefault(key, []).append(ns / 1e6)
    return out


def missed_steps(ev: list[tuple], t0: int, t1: int, slack_ns: int = 1_000_000) -> tuple[int, int]:
    """(requests that missed an engine step, requests): a request missed one when the EngineCore began a step
    (sched.schedule) more than slack_ns after the API server finished its input (api.inputs) and before the
    engine took it (core.request ADD). Requests are paired with their arrivals in order. On the real H200 none
    of cases 1, 2, 4, 5 and 6 missed one; emulated requests that reached the engine late did
    (integrations/vllm_plugin/input_clock.py)."""
    w = [x for x in ev if t0 <= x[0] <= t1]
    ins = [x for x in w if x[2] == "api.inputs"]
    adds = [x for x in w if x[2] == "core.request" and "type=ADD" in x[4]]
    steps = [x[0] for x in w if x[2] == "sched.schedule"]
    missed = 0
    for i, a in zip(ins, adds):
        lo, hi = i[1] + slack_ns, a[0]
        missed += any(lo < s < hi for s in steps)
    return missed, min(len(ins), len(adds))


def gpu_waits(ev: list[tuple], t0: int, t1: int, min_ms: float = 50.0) -> list[tuple[str, int, float]]:
    """Calls of the EngineCore's execute_model or sample_tokens in [t0, t1] that took over min_ms: where the
    host waited for the GPU (cuBLAS loading a kernel at its first use waits for all queued work,
    shim_c/core/blas_lazy.c). (phase, the step's tokens, ms), in order."""
    out, tokens = [], 0
    for s, e, name, _tid, detail, _cpu in ev:
        if not t0 <= s <= t1:
            continue
        if name == "sched.schedule":
            tokens = int(_fields(detail).get("tokens", 0))
        elif name in ("runner.execute", "runner.sample") and (e - s) / 1e6 > min_ms:
            out.append((name.split(".")[1], tokens, round((e - s) / 1e6, 1)))
    return out


def _steps(ev: list[tuple], t0: int, t1: int):
    return (d for s, _e, n, _t, d, _c in ev if t0 <= s <= t1 and n == "sched.schedule" and "tokens=0 " not in d)


def batch_profile(ev: list[tuple], t0: int, t1: int, parts: int = 10) -> list[tuple[float, float, int]]:
    """The engine's steps in [t0, t1] cut into `parts` equal runs of steps: each run's mean requests and
    tokens per step and how many requests it admitted (mean reqs, mean tokens, new). Where the emulated run
    admits a wave of requests more slowly than the real one (case 8's second wave of 256), it makes more,
    smaller steps."""
    steps = [(int(f.get("reqs", 0)), int(f.get("tokens", 0)), int(f.get("new", 0)))
             for f in map(_fields, _steps(ev, t0, t1))]
    out = []
    for q in range(parts):
        seg = steps[q * len(steps) // parts:(q + 1) * len(steps) // parts]
        if seg:
            out.append((sum(x[0] for x in seg) / len(seg), sum(x[1] for x in seg) / len(seg), sum(x[2] for x in seg)))
    return out


def arrival_bursts(ev: list[tuple], t0: int, t1: int, gap_ms: float = 20.0, least: int = 4) -> list[tuple[int, float]]:
    """Bursts of requests reaching the API server's input in [t0, t1]: runs of api.inputs calls less than gap_ms
    apart, at least `least` long, as (requests, ms per request from the first to the last). How fast a wave of
    concurrent requests gets through the bench client and the API server decides how many prefill steps
    the engine splits it into: in case 14 (128 requests at once) real lease s took the first 74 at 1.31 ms
    each, then bursts at 2.0-3.6 ms, and made 52 prefill steps; an emulated run took 127 at 1.23 ms each and
    made 25 larger steps, and a lower TTFT."""
    starts = [s for s, _e, n, *_ in ev if t0 <= s <= t1 and n == "api.inputs"]
    out, first = [], 0
    for i in range(1, len(starts) + 1):
        if i == len(starts) or starts[i] - starts[i - 1] > gap_ms * 1e6:
            n = i - first
            if n >= least:
                out.append((n, (starts[i - 1] - starts[first]) / 1e6 / (n - 1)))
            first = i
    return out


def tokenize_waits(ev: list[tuple], t0: int, t1: int) -> dict[str, list[float]]:
    """The API server's tokenizations in [t0, t1] seen from both sides (timelines since 2026-12-02): the loop
    hands each to its one-thread pool (api.tokenize_async, call to return) and the pool runs it
    (api.tokenize). The pool runs them in order, so the k-th of each are one tokenization. Per tokenization
    (ms): 'to start', from the hand-over to the pool's start (the pieces queued ahead, and Python's GIL, which
    the pool thread must take first); 'in pool' (the call); 'to result', from its end to the coroutine's
    return (the loop taking the result); 'backlog pace', from one call's end to the next's where the next was
    handed over before the first ended: how fast the pool gets through a burst of prompts, which paces a
    burst's arrival at the engine. Compare this one, not 'in pool', between the two sides: a real call ends
    after the thread took the GIL back from the loop, an emulated one before (the GIL model's take for the
    result follows the call: integrations/executor_clock.py)."""
    asy = [x for x in ev if t0 <= x[0] <= t1 and x[2] == "api.tokenize_async"]
    if not asy:
        return {}
    enc = [x for x in ev if asy[0][0] <= x[0] <= t1 and x[2] == "api.tokenize"]
    out: dict[str, list[float]] = {}
    pairs = list(zip(asy, enc))
    for a, e in pairs:
        for key, ns in (("to start", e[0] - a[0]), ("in pool", e[1] - e[0]), ("to result", a[1] - e[1])):
            out.setdefault(key, []).append(ns / 1e6)
    for (_a0, e0), (a1, e1) in zip(pairs, pairs[1:]):
        if a1[0] < e0[1]:
            out.setdefault("backlog pace", []).append((e1[1] - e0[1]) / 1e6)
    return out


def _p90(v: list[float]) -> float:
    return sorted(v)[int(0.9 * (len(v) - 1))]


def _table(title: str, real: dict, emu: dict) -> None:
    print(f"  {title:<26} {'n real/emu':>11} {'real ms':>9} {'emu ms':>9} {'error':>8}")
    for key in sorted(set(real) | set(emu), key=lambda k: (k.split("/")[-1], k)):
        r, e = real.get(key, []), emu.get(key, [])
        rm = statistics.median(r) if r else float("nan")
        em = statistics.median(e) if e else float("nan")
        err = f"{(em - rm) / rm * 100:+7.1f}%" if r and e and rm else ""
        print(f"  {key:<26} {len(r):>5}/{len(e):<5} {rm:9.3f} {em:9.3f} {err:>8}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2:
        print(__doc__)
        return 2
    (rev, rmarks), (eev, emarks) = load(Path(argv[0])), load(Path(argv[1]))
    cases = argv[2:] or [c for c in rmarks if c in emarks and "end" in rmarks[c] and "end" in emarks[c]]
    for case in cases:
        if case not in rmarks or case not in emarks:
            print(f"{case}: not in both runs' marks.txt")
            continue
        rw, ew = (rmarks[case]["start"], rmarks[case]["end"]), (emarks[case]["start"], emarks[case]["end"])
        print(f"{case}: median per phase")
        _table("phase/step kind", phases(rev, *rw), phases(eev, *ew))
        (rm, rn), (em, en) = missed_steps(rev, *rw), missed_steps(eev, *ew)
        print(f"{case}: requests that missed an engine step after reaching the API server's input: real {rm} of "
              f"{rn}, emulated {em} of {en}")
        for side, evs, win in (("real", rev, rw), ("emulated", eev, ew)):
            w = gpu_waits(evs, *win)
            print(f"{case}: {side}: {len(w)} steps waited over 50 ms in execute or sample"
                  + (f" ({sum(x[2] for x in w):.0f} ms): " + ", ".join(f"{p} {t} tok {ms:.0f} ms" for p, t, ms in w[:8])
                     + (" ..." if len(w) > 8 else "") if w else ""))
        rb, eb = batch_profile(rev, *rw), batch_profile(eev, *ew)
        print(f"{case}: steps {sum(1 for _ in _steps(rev, *rw))} real, {sum(1 for _ in _steps(eev, *ew))} emulated; "
              "per tenth of them, mean requests per step (new requests admitted), real | emulated:")
        print("  " + "  ".join(f"{r[0]:.0f}({r[2]})|{e[0]:.0f}({e[2]})" for r, e in zip(rb, eb)))
        ra, ea = arrival_bursts(rev, *rw), arrival_bursts(eev, *ew)
        if ra or ea:
            print(f"{case}: bursts of requests reaching the API server (requests, ms per request), real | emulated: "
                  + " ".join(f"{n}x{ms:.2f}" for n, ms in ra[:6]) + " | " + " ".join(f"{n}x{ms:.2f}" for n, ms in ea[:6]))
        rt, et = tokenize_waits(rev, *rw), tokenize_waits(eev, *ew)
        if rt and et:
            print(f"{case}: tokenizations, hand-over to the pool -> start -> end -> result taken")
            _table("part (median; p90)", rt | {k + " p90": [_p90(v)] for k, v in rt.items()},
                   et | {k + " p90": [_p90(v)] for k, v in et.items()})
        rc, ec = first_token_chain(rev, *rw), first_token_chain(eev, *ew)
        if rc and ec:
            print(f"{case}: first-token chain (meaningful at concurrency 1)")
            _table("phase", rc, ec)
    return 0


if __name__ == "__main__":
    sys.exit(main())
