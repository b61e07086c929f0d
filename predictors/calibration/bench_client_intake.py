"""`vllm bench serve`'s own way in, against a stand-in server: how long its requests take from the client's start
of each to the server's handler, when a case starts a burst of C requests on fresh connections.

Why: under emulation a closed-loop case's first burst reached vLLM's API server sooner than on the real host
(case 4, 128 prompts of 2,048 tokens: the handler's first call 30 ms after the client's first start against
42-55 real; mean way in 42 against 63), while the HTTP path alone (http_intake_bench.py: aiohttp, uvicorn,
FastAPI, pydantic) matched the real host's also on fresh connections. `vllm bench serve`'s session trusts the
environment (trust_env), so aiohttp runs a netrc and a proxy lookup per request in the loop's default
executor; the thirty-seventh session modelled that pool's threads sharing the GIL (shim_c/core/gil.c), which
brought the emulated way in to 50 ms. This measures the client alone on a host, without a GPU or an engine:
the stand-in answers every completion with a stream of `max_tokens` chunks 5 ms apart, as a decoding engine
would. Run it on the real host (CPU only; about 2 minutes on the H200 host, each wave a `vllm bench serve` of
its own) and under `timewarp run`, compare. Real: predictors/data/h200/vllm_2026-12-05a/client_intake.jsonl.

    python predictors/calibration/bench_client_intake.py [--waves 128x2048,64x512,16x1024] [--model FOLDER]

Needs vLLM (its bench client) and a tokenizer folder (default: integrations/models/llama3-8b-shape). Prints one
JSON line: per wave CxI, the handler's first and second calls after the client's first start (ms), the mean
way in (ms: the mean of the handler's call times less the mean of the requests' start times, one monotonic
clock in both processes), the span of the client's starts and of the handler's calls (ms), the client's
mean TTFT (ms) and the CPU of the whole client command (s, this host's: vLLM's import and the dataset too).
"""
import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from http_intake_bench import own_server   # this folder: the script's own on sys.path

ROOT = Path(__file__).resolve().parents[2]
STEP_S = 0.005   # between a stream's chunks, as a decode step


def serve(port: int) -> None:
    import uvicorn
    from fastapi import FastAPI, Request
    from fastapi.responses import StreamingResponse

    app = FastAPI()
    calls: list[float] = []

    @app.post("/v1/completions")
    async def completions(request: Request):
        calls.append(time.perf_counter())
        body = await request.json()
        n = int(body.get("max_tokens") or 1)

        async def stream():
            for _ in range(n):
                await asyncio.sleep(STEP_S)
                yield "data: " + json.dumps({"id": "cmpl-0", "object": "text_completion", "model": body.get("model"),
                                              "choices": [{"index": 0, "text": " x", "finish_reason": None}]}) + "\n\n"
            usage = {"prompt_tokens": 0, "completion_tokens": n, "total_tokens": n}
            yield "data: " + json.dumps({"id": "cmpl-0", "choices": [], "usage": usage}) + "\n\n"
            yield "data: [DONE]\n\n"
        return StreamingResponse(stream(), media_type="text/event-stream")

    @app.get("/calls")
    async def take_calls():
        out = list(calls)
        calls.clear()
        return {"calls": out}

    uvicorn.run(app, host="127.0.0.1", port=port, loop="uvloop", http="httptools", log_level="warning")


def get(port: int, path: str):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as r:
        return json.loads(r.read())


def wave(port: int, model: str, c: int, inp: int, out_dir: str) -> dict:
    get(port, "/calls")   # forget earlier calls
    name = f"w{c}x{inp}.json"
    cmd = [sys.executable, "-m", "vllm.entrypoints.cli.main", "bench", "serve", "--backend", "vllm",
           "--base-url", f"http://127.0.0.1:{port}", "--model", model, "--tokenizer", model,
           "--dataset-name", "random", "--random-input-len", str(inp), "--random-output-len", "4", "--ignore-eos",
           "--num-prompts", str(c), "--max-concurrency", str(c), "--save-result", "--save-detailed",
           "--result-dir", out_dir, "--result-filename", name]
    t = os.times()
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    cpu = (lambda e: e.children_user + e.children_system - t.children_user - t.children_system)(os.times())
    if r.returncode != 0:
        sys.exit(f"bench_client_intake: vllm bench serve failed ({r.returncode}):\n{r.stderr[-3000:]}")
    res = json.loads(Path(out_dir, name).read_text())
    starts = sorted(res["start_times"])
    calls = sorted(get(port, "/calls")["calls"])[-c:]   # the main run's (the initial test run's came first)
    ms = lambda x: round(1e3 * x, 3)
    return {"first_call_ms": ms(calls[0] - starts[0]), "second_call_ms": ms(calls[1] - starts[0]) if c > 1 else None,
            "way_in_ms": ms((sum(calls) - sum(starts)) / c), "starts_span_ms": ms(starts[-1] - starts[0]),
            "calls_span_ms": ms(calls[-1] - calls[0]), "client_cpu_s": round(cpu, 3),
            "mean_ttft_ms": round(res["mean_ttft_ms"], 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--waves", default="128x2048,64x512,16x1024", help="CxINPUT,...: bursts of C prompts of INPUT tokens")
    ap.add_argument("--model", default=str(ROOT / "integrations/models/llama3-8b-shape"), help="a tokenizer folder")
    ap.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.serve:
        serve(a.serve)
        return
    with own_server(__file__) as port, tempfile.TemporaryDirectory() as d:
        res = {w: wave(port, a.model, *map(int, w.split("x")), d) for w in a.waves.split(",")}
        print(json.dumps({"step_s": STEP_S, "waves": res}))

if __name__ == "__main__":
    main()
