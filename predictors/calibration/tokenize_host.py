"""What one prompt's tokenization costs a host, alone and the way vLLM's API server runs it (issue 5).

    python tokenize_host.py [--model integrations/models/llama3-8b-shape] > OUT.jsonl

vLLM's API server tokenizes each prompt in a one-thread pool while its event loop runs (BaseRenderer._encode:
transformers' `encode`, whose Rust part runs through `tokenizers`' encode_batch and its rayon pool). Under
emulation that call is charged the thread's CPU time at the native pace (integrations/native_price.py), and
the emulated API server's tokenizations came out 1.2-1.6x the real hosts' (mean pace through a burst,
leases y, z, ac; 384-2,048 tokens), while the same call alone on the emulating machine is priced about right. This measures, per
prompt length (random vocabulary ids, decoded, as `vllm bench serve`'s random dataset makes them):
  - `direct`: `tokenizers.Tokenizer.encode` on the main thread (the native probe's kind of call);
  - `direct_cold`: the same after 20 ms asleep (other processes run meanwhile and take the caches: on the
    emulating machine a cold call of 256 tokens took 2x a warm call's CPU alone, 2.5-2.6x beside
    memory-heavy processes, while a warm call did not change; coordinator/pace.py's probe is warm);
  - `encode`: transformers' `encode` on the main thread;
  - `pool_idle`: `encode` in a one-thread pool, the asyncio loop waiting for it;
  - `pool_loop`: the same while the loop works: 0.3 ms of Python per turn, then a 0.2 ms sleep (an API
    server streaming outputs);
each as the median wall and thread CPU time (us) of the calls after a warm-up. `TOKENIZERS_PARALLELISM=false`
runs the same without the rayon pool (one line each). Runs unmodified on a real host and under `timewarp run`.
"""
import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

ap = argparse.ArgumentParser()
ap.add_argument("--model", default="integrations/models/llama3-8b-shape")
ap.add_argument("--lengths", default="384,512,1024,2048")
ap.add_argument("--calls", type=int, default=30)
ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
a = ap.parse_args()

if not a.child:   # this environment as given, then without the rayon pool
    for par in (None, "false"):
        env = dict(os.environ)
        if par:
            env["TOKENIZERS_PARALLELISM"] = par
        subprocess.run([sys.executable, __file__, "--child", "--model", a.model, "--lengths", a.lengths,
                        "--calls", str(a.calls)], env=env, check=False)
    sys.exit(0)

from tokenizers import Tokenizer  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402

raw = Tokenizer.from_file(os.path.join(a.model, "tokenizer.json"))
tok = AutoTokenizer.from_pretrained(a.model)
rng = random.Random(0)
vocab = raw.get_vocab_size()
pool = ThreadPoolExecutor(1)


def timed(fn, *args):
    t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
    fn(*args)
    return (time.perf_counter_ns() - t0) / 1e3, (time.thread_time_ns() - c0) / 1e3


def med(rows):
    rows = rows[3:]
    return round(statistics.median(w for w, _ in rows), 1), round(statistics.median(c for _, c in rows), 1)


async def busy_loop(stop):
    while not stop.is_set():
        t = time.perf_counter() + 0.0003
        x = 0
        while time.perf_counter() < t:
            x += 1
        await asyncio.sleep(0.0002)


async def main():
    loop = asyncio.get_running_loop()
    res = {"tokenizers_parallelism": os.environ.get("TOKENIZERS_PARALLELISM"), "cpus": os.cpu_count()}
    for n in [int(x) for x in a.lengths.split(",")]:
        prompts = [raw.decode([rng.randrange(vocab) for _ in range(n)]) for _ in range(a.calls)]
        r = {"tokens": len(tok.encode(prompts[0]))}
        r["direct"] = med([timed(raw.encode, p) for p in prompts])
        r["direct_cold"] = med([(time.sleep(0.02), timed(raw.encode, p))[1] for p in prompts])
        r["encode"] = med([timed(tok.encode, p) for p in prompts])
        r["pool_idle"] = med([await loop.run_in_executor(pool, timed, tok.encode, p) for p in prompts])
        stop = asyncio.Event()
        task = loop.create_task(busy_loop(stop))
        await asyncio.sleep(0.01)
        r["pool_loop"] = med([await loop.run_in_executor(pool, timed, tok.encode, p) for p in prompts])
        stop.set()
        await task
        res[str(n)] = r
    print(json.dumps(res), flush=True)

asyncio.run(main())
os._exit(0)   # the pool's thread
