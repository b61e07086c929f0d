"""The HTTP way in of a vLLM-like API server, alone: how long a completion request takes from the client's start
of it to the server's handler, at concurrency 1 and in waves of concurrent requests.

Why: under emulation vLLM's "way in" (bench_compare: the client's start of a request to the API server's
handler) came out about 30% short against three H200 hosts in case 4 (128 requests of 2,048 tokens: 39-52 ms
against 50-65) while the API server's CPU over the whole case was charged between two hosts' (docs/VLLM.md,
twenty-sixth session). This isolates that path, without vLLM: uvicorn (httptools, uvloop, as vLLM serves), a
FastAPI route validating a pydantic body, and an aiohttp client posting a JSON body with a prompt of about
2,048 tokens' text, as `vllm bench serve` does. Run it on the real host and under `timewarp run`, compare.

    python predictors/calibration/http_intake_bench.py [--waves 128x4,16x8,1x32] [--prompt-chars 10000]

Prints one JSON line: per wave size C, the mean way in (ms; the mean of the handler's call times less the mean of
the requests' start times, one monotonic clock in both processes), the span of the handler's calls within a
wave (ms), the wave's wall time (ms), the way in of the first round and of the last half of the rounds (a fresh machine's
first rounds are slower), the server's and the client's CPU per request over the waves (ms, this host's:
under emulation, this machine's CPU, not what it was charged), and the last round's timings relative to its
first start (`last_round`: each request's start, the server's intake of its bytes, its handler call).
"""
import argparse
import asyncio
import contextlib
import json
import random
import socket
import subprocess
import sys
import time


def serve(port: int) -> None:
    import uvicorn
    from fastapi import FastAPI
    from pydantic import BaseModel

    class Completion(BaseModel):
        model: str
        prompt: str
        max_tokens: int = 16
        temperature: float = 0.0
        stream: bool = False
        ignore_eos: bool = False

    app = FastAPI()
    calls: list[float] = []
    reads: list[float] = []   # when the server took each request's bytes in (uvicorn's protocol), to split the way in
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    data_received = HttpToolsProtocol.data_received

    def timed_data_received(self, data):
        reads.append(time.perf_counter())
        return data_received(self, data)
    HttpToolsProtocol.data_received = timed_data_received

    # (no `from __future__ import annotations` in this file: FastAPI must see the model class itself here)
    @app.post("/v1/completions")
    async def completions(req: Completion):
        calls.append(time.perf_counter())
        return {"id": "cmpl-0", "object": "text_completion", "model": req.model,
                "choices": [{"index": 0, "text": "x", "finish_reason": "length"}]}

    @app.get("/calls")
    async def take_calls():
        out, got = list(calls), list(reads)
        calls.clear()
        reads.clear()
        return {"calls": out, "reads": got, "cpu_s": time.process_time()}   # the server's CPU, finer than /proc's ticks

    uvicorn.run(app, host="127.0.0.1", port=port, loop="uvloop", http="httptools", log_level="warning")


async def waves(port: int, plan: list[tuple[int, int]], prompt: str) -> dict:
    import aiohttp

    url = f"http://127.0.0.1:{port}/v1/completions"
    out = {}
    # vllm bench serve's session: no connection limit, keep-alive
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        async def post(starts: list[float]) -> None:
            starts.append(time.perf_counter())
            async with session.post(url, json={"model": "m", "prompt": prompt, "max_tokens": 16,
                                               "ignore_eos": True}) as r:
                r.raise_for_status()
                await r.read()

        async with session.post(url, json={"model": "m", "prompt": "warm up"}) as r:   # warm-up
            r.raise_for_status()
            await r.read()
        for c, rounds in plan:
            way, span, wall, server_cpu, client_cpu = [], [], [], 0.0, 0.0
            for _ in range(rounds):
                async with session.get(f"http://127.0.0.1:{port}/calls") as r:
                    s0 = (await r.json())["cpu_s"]   # and forget earlier calls
                starts: list[float] = []
                c0, t = time.process_time(), time.perf_counter()
                await asyncio.gather(*(post(starts) for _ in range(c)))
                wall.append(time.perf_counter() - t)
                client_cpu += time.process_time() - c0
                async with session.get(f"http://127.0.0.1:{port}/calls") as r:
                    got = await r.json()
                calls, reads = got["calls"], got["reads"]
                server_cpu += got["cpu_s"] - s0
                way.append((sum(calls) - sum(starts)) / c)
                span.append(max(calls) - min(calls))
            t0 = min(starts)   # the last round's timings, relative to its first start (ms): how the way in is made
            detail = {"starts_ms": [round(1e3 * (x - t0), 3) for x in sorted(starts)],
                      "calls_ms": [round(1e3 * (x - t0), 3) for x in sorted(calls)],
                      "reads_ms": [round(1e3 * (x - t0), 3) for x in sorted(reads)]}
            n = c * rounds
            # the first round of each size apart: a fresh machine's first rounds are slower (warm-up)
            out[str(c)] = {"way_in_ms": 1e3 * sum(way) / rounds, "call_span_ms": 1e3 * sum(span) / rounds,
                           "wall_ms": 1e3 * sum(wall) / rounds, "rounds": rounds,
                           "way_in_ms_first_round": 1e3 * way[0], "way_in_ms_last_half": 1e3 * sum(way[rounds // 2:]) / (rounds - rounds // 2),
                           "server_cpu_ms_per_req": 1e3 * server_cpu / n, "client_cpu_ms_per_req": 1e3 * client_cpu / n,
                           "last_round": detail}
    return out


@contextlib.contextmanager
def own_server(script: str):
    """`script --serve PORT` (its stand-in server) on a free loopback port, until it accepts connections; yields
    the port, and stops the server at the end (also bench_client_intake.py's)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = subprocess.Popen([sys.executable, script, "--serve", str(port)])
    try:
        for _ in range(600):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if srv.poll() is not None:
                    sys.exit(f"{script}: the server exited ({srv.returncode})")
                time.sleep(0.1)
        yield port
    finally:
        srv.terminate()
        srv.wait(timeout=10)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--waves", default="128x4,16x8,1x32", help="CxROUNDS,...: waves of C concurrent requests")
    ap.add_argument("--prompt-chars", type=int, default=10000, help="the prompt's length (2,048 tokens: ~10,000)")
    ap.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.serve:
        serve(a.serve)
        return
    plan = [(int(c), int(r)) for c, r in (w.split("x") for w in a.waves.split(","))]
    with own_server(__file__) as port:
        rng = random.Random(0)
        words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
                 for _ in range(2000)]
        prompt = " ".join(rng.choice(words) for _ in range(a.prompt_chars // 6))[:a.prompt_chars]
        res = asyncio.run(waves(port, plan, prompt))
        print(json.dumps({"prompt_chars": len(prompt), "waves": res}))

if __name__ == "__main__":
    main()
