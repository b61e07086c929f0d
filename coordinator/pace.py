"""The host pace: what one CPU second of this machine is worth on the target GPU machine's host, right now.

Emulated programs are charged their own CPU time (shim_c/core/vclock.c). On a shared cloud machine that CPU
time is not steady. On the 2-vCPU development machine a fixed Python probe took 1.0x, 1.1x or 1.9x its
fastest time depending on the moment. Each state lasts 0.1-10 s, each vCPU has its own, and steal time is
about zero: the neighbours slow the core, not the scheduler. The same states moved torch's eager dispatch
by 1.2-2.7x and a scheduler-like loop over many objects by 1.1-2.7x. A vLLM engine step's host work moved
1.7x between two runs of one build (1.58 against 2.68 ms), and so did the predicted TTFT.

So one probe process per run (started by the coordinator, outside emulation) visits each CPU in turn. On
each it runs a fixed probe twice, the first run to warm it and the second timed by thread CPU time. The
probe is interpreter loops, json and regular expressions, the kinds of work in host_speed.py. The process
publishes, per CPU, pace = TARGET_US / (median of that CPU's last 5 timed probes). The shim multiplies
every CPU ns it charges on that CPU by it.

TARGET_US is what the probe's time on the target's host is taken to be (a calibration constant, below). It
carries over to another emulation machine through that machine's own probe time, as far as the probe slows
as the program's host work does there.

Native code is priced apart. This machine's neighbours slow its Python 2-3.6x more than they slow a
tokenizer's Rust (predictors/data/h200/native_probe_2026-12-02: beside an emulated vLLM run the Python probe
took 2.1x its idle time, the tokenizer 1.0-1.3x), so one pace left vLLM's tokenization 30-50% short of the
real host's. Every NATIVE_EVERY rounds the process also times a native probe on each CPU: the embedded model's
tokenizer (HF `tokenizers`, as vLLM runs it) encoding a 256-token prompt of vLLM's random dataset, and
publishes native pace = NATIVE_TARGET_US / (median of the last 5). The shim charges it for code a binding marks
as native (integrations/native_price.py marks HF tokenizers' encode and decode). Without `tokenizers`, native
code is charged the Python pace. The native probe also steadies the Python pace (BLEND_US below).

    python -m timewarp.coordinator.pace --measure [SECONDS]   # this machine's probe times, per CPU
"""
from __future__ import annotations

import argparse
import json
import math
import mmap
import os
import re
import signal
import statistics
import struct
import sys
import time
from pathlib import Path

# What a CPU second here is priced against: the probe's time on the target host as the virtual clock should
# see it. Probed on H200 hosts, the per-CPU medians were 147-167 us on one lease and 260-290 us on another
# (predictors/data/h200/pace_probe_2026-11-30, vllm_2026-11-30g), yet vLLM's real TTFT differed by only 6-8%
# between the two. A probe of an idle host does not carry over, so this is a calibration constant: 1.29x this
# machine's usual 122 us. vLLM's TTFT over cases 1-6 came out -8.6% on average at 1.32 (two runs) and
# +14.6% at 1.56 (docs/VLLM.md).
# TIMEWARP_PACE_TARGET_US overrides it: the launcher parses it (and names a malformed value) and hands the
# probe the target it chose; reading the variable here as well crashed on a malformed one at import.
TARGET_US = 157.0
# The development machine's probe time in its usual state. Where no pace is measured (before the probe's
# first round; a program run without `timewarp run`, whose clock is its own), CPU time is priced at
# TARGET_US / USUAL_US: right for that machine in that state, a guess elsewhere.
USUAL_US = 122.0


# What the native probe's time on the target host is taken to be: its time measured there (569 us: the median of
# 32 per-CPU medians over two 10 s measurements, 510 and 612 us each; predictors/data/h200/native_probe_2026-12-02,
# pace_native_*.json), times 1.14 for how much slower the real host tokenizes inside vLLM's API server than in a
# script of its own. That factor is fitted: with 790 us (569 x 1.39, the slowdown leases s and t showed at 256-1,024
# tokens) the emulated pool's time per prompt came out 1.19x the real leases' (api.tokenize medians of 13 real
# leases over eleven cases, geometric mean; 0.97-1.43 per case), as the real hosts themselves differ by up to 1.24x
# at one length (1,024 tokens: 2.84 ms on leases k-o, 3.52 on s and t). 650 centres it.
NATIVE_TARGET_US = 650.0
# The Python pace is blended with the native probe: the price of code not marked native is the geometric mean of
# TARGET_US / (Python probe) and BLEND_US / (native probe). Why: the Python probe alone over-reacts to some of this
# machine's states. In seven vLLM runs of the nineteenth session the engine's and the API server's host work took
# the same CPU time per step as in the eighteenth session's runs (within 5-10%, per case), while the Python probe's
# run mean moved from 340 to 410 us (pace x0.46 to x0.37) and the native probe's did not follow (825-964 us): the
# host-bound cases' TTFT fell 15-24% with the pace. BLEND_US is the native probe's time in the run whose Python pace
# was the eighteenth session's (x0.46, 964 us), so the blend leaves the pace of the state TARGET_US was fitted in as
# it was. TIMEWARP_PACE_BLEND_US overrides it (0: Python's pace alone).
BLEND_US = 443.0
# The price of the kernel's CPU time (a thread's system time: its system calls), charged apart from the pace
# (shim_c/core/vclock.c): virtual ns per ns. Why: the probes above run in user mode, and this machine's states
# that slow them 2x leave a system call's CPU within about 20% (predictors/data/h200/syscall_probe_2026-12-06);
# priced at the pace, the 13-32% of the serving processes' CPU spent in the kernel here swung with it. A fixed
# price: the pace of the state the host prices were fitted in (x0.46, BLEND_US above), so that on average the
# charge stays where it was fitted. TIMEWARP_KERNEL_PRICE overrides it (0: charged at the pace, as before).
KERNEL_PRICE = 0.46
NATIVE_EVERY = 5
NATIVE_TOKENS = 256
TOKENIZER = Path(__file__).resolve().parents[1] / "integrations" / "models" / "llama3-8b-shape" / "tokenizer.json"


def fallback_factor(target_us: float = TARGET_US) -> float:
    return max(0.05, min(target_us / USUAL_US, 20.0))


# A full round over the CPUs at most this often (s); more CPUs make the round longer (about 1% of one CPU).
ROUND_S = 0.02
WINDOW = 5

_OBJ = {"id": "cmpl-1", "object": "text_completion", "created": 1, "model": "m",
        "choices": [{"index": i, "text": "hello world " * 4, "finish_reason": None} for i in range(4)]}
_WORD = re.compile(r"\w+|[^\w\s]")
_TEXT = "The quick brown fox, jumps over 13 lazy dogs; again and again."


def probe() -> None:
    """About 115 us of CPU on the development machine at its fastest."""
    d: dict[int, int] = {}
    for i in range(600):
        d[i & 63] = d.get(i & 63, 0) + i
    for _ in range(4):
        json.loads(json.dumps(_OBJ))
    for i in range(20):
        " ".join(_WORD.findall(_TEXT)[: (i % 10) + 3])


def timed_probe() -> float:
    """CPU us of one probe, after a warm-up run on the same CPU."""
    probe()
    t = time.thread_time_ns()
    probe()
    return (time.thread_time_ns() - t) / 1e3


def random_prompts(tok, n: int, count: int = 8) -> list[str]:
    """count prompts of about n tokens as vLLM's random dataset makes them: random vocabulary ids, decoded
    (seeded by n; predictors/calibration/native_probe.py measures the same prompts)."""
    import random
    rng = random.Random(n)
    vocab = tok.get_vocab_size()
    return [tok.decode([rng.randrange(vocab) for _ in range(n)]) for _ in range(count)]


class NativeProbe:
    """Encodes random_prompts of NATIVE_TOKENS tokens, one per call in turn, each warmed by one encode."""

    def __init__(self) -> None:
        from tokenizers import Tokenizer
        self.tok = Tokenizer.from_file(str(TOKENIZER))
        self.prompts = random_prompts(self.tok, NATIVE_TOKENS)
        self.i = 0

    def pair(self) -> tuple[float, float]:
        """CPU us of two encodes of the next prompt in a row: the first as the caches are, the second warm."""
        p = self.prompts[self.i % len(self.prompts)]
        self.i += 1
        t0 = time.thread_time_ns()
        self.tok.encode(p)
        t1 = time.thread_time_ns()
        self.tok.encode(p)
        return (t1 - t0) / 1e3, (time.thread_time_ns() - t1) / 1e3

    def timed(self) -> float:
        """CPU us of one encode, after a warm-up encode of the same prompt on the same CPU."""
        return self.pair()[1]


def cold_call_us(rounds: int = 12, rest_s: float = 0.02) -> float | None:
    """This machine's cost of a cold tokenizer call: the CPU us a 256-token encode takes after `rest_s` asleep
    beyond what the same encode takes right after it, median over `rounds` (about 0.3 s); None without the
    tokenizer.

    Why: the native probe is timed warm, but vLLM's API server tokenizes each prompt after the run's other
    processes had the caches. On the 2-core emulation machine that refill took 0.3-0.5 ms of CPU a call,
    more beside memory-heavy processes, whatever the prompt's length (docs/VLLM.md, forty-third session), and
    at the native pace the emulated tokenizer pool came out 1.2-1.6x the real hosts' per prompt. The real
    hosts' own refill is part of NATIVE_TARGET_US (their in-server slowdown, 1.14x), so the emulator can
    forgive this machine's (integrations/native_price.py; integrations/launcher.py's native_cold_env)."""
    probe = native_probe()
    if probe is None:
        return None
    extra = []
    for _ in range(rounds):
        time.sleep(rest_s)
        cold, warm = probe.pair()
        extra.append(cold - warm)
    return max(0.0, statistics.median(extra))


def native_probe() -> NativeProbe | None:
    """The native probe, or None where `tokenizers` or the embedded tokenizer is missing."""
    try:
        return NativeProbe()
    except Exception:   # ImportError, a missing or unreadable tokenizer file
        return None


def _pin(cpu: int) -> bool:
    try:
        os.sched_setaffinity(0, {cpu})
        return True
    except OSError:  # the CPU went offline or out of our set
        return False


def _summary(published: dict[int, int], ncpu: int, target_us: float) -> dict:
    """The paces written over the run (a count per value): rounds, mean, p10, p90."""
    n = sum(published.values())

    def quantile(q: float) -> float:
        seen = 0
        for v in sorted(published):
            seen += published[v]
            if seen > q * n:
                return v / 1000
        return max(published) / 1000
    return {"rounds": n // max(1, ncpu), "cpus": ncpu, "target_us": target_us,
            "mean": sum(v * k for v, k in published.items()) / n / 1000, "p10": quantile(0.1), "p90": quantile(0.9)}


def run(clock_path: str, on_off: int, milli_off: int, mean_off: int, ncpu_max: int, target_us: float,
        native: tuple[int, int, int, float] | None = None, blend_us: float = 0.0) -> int:
    """Measure until the clock file or the parent goes away; write the paces into the clock file. native:
    (on, milli and mean offsets, target us) of the native pace, or None not to measure it. blend_us: price
    Python by the geometric mean of the Python pace and BLEND_US / the native probe's time (0: Python's)."""
    parent = os.getppid()
    cpus = sorted(c for c in os.sched_getaffinity(0) if c < ncpu_max)
    fd = os.open(clock_path, os.O_RDWR)
    mm = mmap.mmap(fd, 0)
    os.close(fd)
    nprobe = None   # made after the first round: loading the tokenizer takes 0.3-1 s
    # per CPU, the last WINDOW probe times, Python's and the native probe's
    hist: dict[int, list[float]] = {c: [] for c in cpus}
    nhist: dict[int, list[float]] = {c: [] for c in cpus}
    # every pace written, for the run's summary: a count per value (bounded however long the run)
    published: dict[int, int] = {}
    npublished: dict[int, int] = {}

    def summarize(*_):
        if published:
            summary = _summary(published, len(cpus), target_us)
            if npublished:
                summary["native"] = _summary(npublished, len(cpus), native[3])
            try:
                with open(clock_path + ".pace.json", "w") as f:
                    json.dump(summary, f)
            except OSError:
                pass
        sys.exit(0)

    def publish(h: list[float], sample: float, target: float, milli_at: int, counts: dict[int, int],
                blend: list[float] | None = None) -> None:
        h.append(sample)
        del h[:-WINDOW]
        pace = target / statistics.median(h)
        if blend:
            pace = math.sqrt(pace * blend_us / statistics.median(blend))
        milli = max(50, min(int(round(1000 * pace)), 20000))
        struct.pack_into("<I", mm, milli_at, milli)
        counts[milli] = counts.get(milli, 0) + 1

    def publish_mean(on_at: int, milli_at: int, mean_at: int) -> None:
        paces = [struct.unpack_from("<I", mm, milli_at + 4 * c)[0] for c in cpus]
        paces = [p for p in paces if p]
        if paces:
            struct.pack_into("<I", mm, mean_at, int(sum(paces) / len(paces)))
            struct.pack_into("<I", mm, on_at, 1)   # every CPU has a value: the shim may start using them

    signal.signal(signal.SIGTERM, summarize)
    period = max(ROUND_S, 0.0025 * len(cpus))
    rounds = 0
    while os.getppid() == parent and os.path.exists(clock_path):
        t0 = time.monotonic()
        with_native = nprobe is not None and rounds % NATIVE_EVERY == 0
        for c in cpus:
            if not _pin(c):
                continue
            if with_native:
                publish(nhist[c], nprobe.timed(), native[3], native[1] + 4 * c, npublished)
            publish(hist[c], timed_probe(), target_us, milli_off + 4 * c, published,
                    nhist[c] if blend_us > 0 else None)
        publish_mean(on_off, milli_off, mean_off)
        if with_native:
            publish_mean(native[0], native[1], native[2])
        if rounds == 0 and native:
            nprobe = native_probe()
        rounds += 1
        time.sleep(max(0.0, period - (time.monotonic() - t0)))
    summarize()
    return 0


def measure(seconds: float) -> dict:
    """This machine's probe times per CPU (us), sampled as the running probe samples them; the native
    probe's too, where it can run."""
    cpus = sorted(os.sched_getaffinity(0))
    nprobe = native_probe()
    samples: dict[int, list[float]] = {c: [] for c in cpus}
    nsamples: dict[int, list[float]] = {c: [] for c in cpus}
    end = time.monotonic() + seconds
    rounds = 0
    while time.monotonic() < end:
        for c in cpus:
            if _pin(c):
                samples[c].append(timed_probe())
                if nprobe is not None and rounds % NATIVE_EVERY == 0:
                    nsamples[c].append(nprobe.timed())
        rounds += 1
        time.sleep(ROUND_S)

    def stats(per_cpu: dict[int, list[float]]) -> dict:
        out = {}
        for c, v in per_cpu.items():
            v.sort()
            if v:
                out[str(c)] = {"n": len(v), "min": v[0], "p10": v[len(v) // 10], "median": statistics.median(v),
                               "p90": v[9 * len(v) // 10]}
        return out
    res = {"target_us": TARGET_US, "cpus": stats(samples)}
    if nprobe is not None:
        res["native"] = {"target_us": NATIVE_TARGET_US, "cpus": stats(nsamples)}
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--measure", type=float, nargs="?", const=10.0, metavar="SECONDS",
                    help="print this machine's probe times per CPU and exit")
    ap.add_argument("--run", nargs=6, metavar=("CLOCK", "ON", "MILLI", "MEAN", "NCPU", "TARGET_US"),
                    help=argparse.SUPPRESS)
    ap.add_argument("--native", nargs=4, metavar=("ON", "MILLI", "MEAN", "TARGET_US"), help=argparse.SUPPRESS)
    ap.add_argument("--blend", type=float, default=0.0, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.run:
        path, on, milli, mean, ncpu, target = a.run
        native = (int(a.native[0]), int(a.native[1]), int(a.native[2]), float(a.native[3])) if a.native else None
        return run(path, int(on), int(milli), int(mean), int(ncpu), float(target), native, a.blend)
    print(json.dumps(measure(a.measure or 10.0), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
