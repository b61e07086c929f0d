"""The host-speed factor: CPU seconds the target GPU machine's host needs for what takes one CPU second here.

Emulated programs are charged their thread CPU time on this machine (shim_c/core/vclock.c), scaled by
TIMEWARP_HOST_SPEED. The work a serving stack does on its host (vLLM's scheduler and model runner, the API
server's HTTP/JSON and tokenization, the benchmark client) is mostly Python with some C/C++ underneath, so the
factor is measured on workloads of those kinds, each timed by process CPU time (min of several repeats, to
shed noise from a loaded machine):
  python      function calls, attribute and dict/list work (the interpreter's core)
  json        json.dumps/loads of request-like objects (the API server and client)
  text        str formatting, split/join and regular expressions (detokenization, SSE framing)
  torch       dispatch of small eager CPU tensor ops (vLLM's host-side tensor bookkeeping)
The factor is the geometric mean over workloads of (time on the target host / time here). The target host's
times are measured once on the real machine (`python -m timewarp.predictors.host_speed --out FILE` there) and
stored with the GPU's data; host_speed() measures this machine (about 1 s, cached per CPU model and Python
version in ~/.cache/timewarp/). `timewarp run` does not apply it yet: against the real H200's vLLM
benchmarks the factor (1.63 on the development machine) made predictions worse, whether applied to every
process or only to those without GPU work (docs/LIMITATIONS.md); TIMEWARP_HOST_SPEED sets a factor by hand.

    python -m timewarp.predictors.host_speed [--out FILE]       # print (and save) this machine's times
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import sys
import time
from pathlib import Path

REFERENCE = Path(__file__).resolve().parent / "data" / "h200" / "host_speed_2026-11-30.json"
REPEATS = 5


def _python(n: int = 300_000) -> None:
    class Req:
        __slots__ = ("rid", "tokens", "done")

        def __init__(self, rid):
            self.rid, self.tokens, self.done = rid, [], False

    reqs = {i: Req(i) for i in range(64)}
    for i in range(n):
        r = reqs[i & 63]
        r.tokens.append(i)
        if len(r.tokens) > 32:
            r.tokens = r.tokens[-8:]
        r.done = (i % 7) == 0 and not r.done


def _json(n: int = 3_000) -> None:
    obj = {"id": "cmpl-123", "object": "text_completion", "created": 1, "model": "m",
           "choices": [{"index": i, "text": "hello world " * 4, "logprobs": None, "finish_reason": None}
                       for i in range(4)], "usage": {"prompt_tokens": 512, "completion_tokens": 128}}
    for _ in range(n):
        json.loads(json.dumps(obj))


_WORD = re.compile(r"\w+|[^\w\s]")


def _text(n: int = 6_000) -> None:
    s = "The quick brown fox, jumps over 13 lazy dogs; again and again. "
    for i in range(n):
        words = _WORD.findall(s)
        out = "data: " + " ".join(words[: (i % 10) + 3]) + f" {i}\n\n"
        out.split(" ")


def _torch(n: int = 6_000) -> None:
    import torch

    a = torch.ones(16)
    b = torch.arange(16, dtype=torch.float32)
    for _ in range(n):
        (a + b).mul_(2).sum()


def _objects(n_req: int = 4096, rounds: int = 12) -> None:
    """Per-request bookkeeping over a working set of several MB, as a scheduler's update over many running
    requests does (attribute reads, lookups by string id, list appends); the loops above fit in L1/L2. vLLM's
    per-request host work ran 1.4-2.4x slower on the 2-core development machine than on an H200 host whose
    small loops ran at the same speed (docs/LIMITATIONS.md)."""
    class Req:
        def __init__(self, i):
            self.request_id = f"cmpl-{i:08x}-0"
            self.output_token_ids = []
            self.block_ids = list(range(i, i + 64))
            self.num_computed_tokens = 0
            self.status = "RUNNING"
            self.sampling = {"temperature": 1.0, "max_tokens": 256, "stop": None}

    reqs = [Req(i) for i in range(n_req)]
    by_id = {r.request_id: r for r in reqs}
    for k in range(rounds):
        for r in reqs[k % 7::3] + reqs[::3]:
            q = by_id[r.request_id]
            q.output_token_ids.append(k)
            q.num_computed_tokens += 1
            if q.num_computed_tokens % 16 == 0:
                q.block_ids.append(q.block_ids[-1] + 1)
            if q.sampling["max_tokens"] <= len(q.output_token_ids):
                q.status = "FINISHED"


WORKLOADS = {"python": _python, "json": _json, "text": _text, "torch": _torch, "objects": _objects}


def measure(workloads=WORKLOADS, repeats: int = REPEATS) -> dict[str, float]:
    """CPU seconds of each workload on this machine (min over repeats, after one warm-up)."""
    out = {}
    for name, fn in workloads.items():
        try:
            fn()
        except ImportError:
            continue
        best = math.inf
        for _ in range(repeats):
            t = time.process_time()
            fn()
            best = min(best, time.process_time() - t)
        out[name] = best
    return out


def machine_key() -> str:
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu or platform.processor()}|python{sys.version_info[0]}.{sys.version_info[1]}"


def factor(target: dict[str, float], here: dict[str, float]) -> float:
    """Geometric mean of target/here over the workloads both have."""
    common = [k for k in target if k in here and here[k] > 0 and target[k] > 0]
    if not common:
        return 1.0
    return math.exp(sum(math.log(target[k] / here[k]) for k in common) / len(common))


def host_speed(reference: Path = REFERENCE, cache_dir: Path | None = None) -> tuple[float, str]:
    """(factor, how it was obtained) for programs emulating the reference host on this machine."""
    env = os.environ.get("TIMEWARP_HOST_SPEED")
    if env:
        return float(env), "TIMEWARP_HOST_SPEED"
    try:
        target = json.loads(reference.read_text())["cpu_s"]
    except (OSError, ValueError, KeyError):
        return 1.0, f"no reference host measurement ({reference.name}); 1.0"
    cache_dir = cache_dir or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "timewarp"
    cache = cache_dir / "host_speed.json"
    key = machine_key()
    try:
        cached = json.loads(cache.read_text())
    except (OSError, ValueError):
        cached = {}
    here = cached.get(key)
    if not isinstance(here, dict):
        here = measure()
        cached[key] = here
        try:
            cache_dir.mkdir(parents=True, exist_ok=True)
            cache.write_text(json.dumps(cached, indent=1))
        except OSError:
            pass
    return factor(target, here), f"measured against {reference.name} ({key})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="write this machine's times (JSON) to FILE")
    a = ap.parse_args(argv)
    t = measure()
    rec = {"cpu_s": t, "machine": machine_key(), "date": time.strftime("%Y-%m-%d"), "repeats": REPEATS,
           "command": "python -m timewarp.predictors.host_speed"}
    print(json.dumps(rec, indent=1))
    if REFERENCE.exists():
        print(f"factor vs {REFERENCE.name}: {host_speed(cache_dir=Path('/nonexistent'))[0]:.3f}", file=sys.stderr)
    if a.out:
        Path(a.out).write_text(json.dumps(rec, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
