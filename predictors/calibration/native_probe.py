"""How fast this host runs a tokenizer's native code, next to the host pace's Python probe.

    python predictors/calibration/native_probe.py --out FILE.json [--repeats N]

Why: under emulation vLLM's tokenizer is charged 30-50% less than it costs on the real H200 host (docs/VLLM.md,
eighteenth session): its native (Rust) code runs about as fast on the emulation machine as there, while
Python runs 2-3.6x slower, and one host pace, measured with a Python probe (coordinator/pace.py), prices both.
This measures, on whichever host it runs (the real H200's, or the emulation machine's), the thread CPU time of:
- the pace probe (coordinator/pace.py's `probe`, warm);
- the embedded model's tokenizer (integrations/models/llama3-8b-shape/tokenizer.json, HF `tokenizers`)
  encoding prompts as vLLM's random dataset makes them (random token ids decoded to text), 128 to 4096 tokens;
- two other native probes that need nothing but the standard library (zlib, sha256), as candidates for a
  native pace that carries over from host to host.
Medians of `repeats` timed runs after a warm-up, per item. Runs in about 10 s.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import platform
import random
import statistics
import sys
import time
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(HERE / "coordinator"))
from pace import TOKENIZER, probe, random_prompts  # noqa: E402  (coordinator/pace.py: the host pace's probes)

LENGTHS = (128, 256, 512, 1024, 2048, 4096)


def cpu_us(fn, repeats: int) -> float:
    fn()
    out = []
    for _ in range(repeats):
        t = time.thread_time_ns()
        fn()
        out.append((time.thread_time_ns() - t) / 1e3)
    return statistics.median(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--repeats", type=int, default=15)
    a = ap.parse_args()
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(TOKENIZER))
    res: dict = {"pace_probe_us": cpu_us(probe, a.repeats * 4)}
    blob = random.Random(0).randbytes(1 << 20)
    res["zlib_1mib_us"] = cpu_us(lambda: zlib.compress(blob, 6), a.repeats)
    res["sha256_16mib_us"] = cpu_us(lambda: hashlib.sha256(blob * 16).digest(), a.repeats)
    enc = {}
    for n in LENGTHS:
        ps = random_prompts(tok, n)
        tokens = statistics.median(len(tok.encode(p).ids) for p in ps)
        enc[str(n)] = {"tokens": tokens, "encode_us": statistics.median(cpu_us(lambda p=p: tok.encode(p), a.repeats)
                                                                          for p in ps)}
    res["tokenizer_encode"] = enc
    import tokenizers
    res["provenance"] = {"host": platform.node(), "cpu": platform.processor() or platform.machine(),
                         "python": platform.python_version(), "tokenizers": tokenizers.__version__,
                         "date": time.strftime("%Y-%m-%d"), "command": " ".join(sys.argv)}
    try:
        res["provenance"]["cpu_model"] = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                                              if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    Path(a.out).write_text(json.dumps(res, indent=1))
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
