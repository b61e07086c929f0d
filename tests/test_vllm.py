"""vLLM under emulation: the plugin's host-visible results (unit) and `vllm serve` + `vllm bench serve` end to
end on one virtual clock (integrations/vllm_bench.py, integrations/vllm_plugin/)."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import run_emulated

vllm = pytest.importorskip("vllm", reason="vLLM is not installed (the CI venv installs vllm==0.24.0)")
REPO = Path(__file__).resolve().parent.parent


def test_num_sampled_is_zero_only_for_unfinished_chunked_prefills():
    from timewarp.integrations.vllm_plugin.host_results import num_sampled

    batch = SimpleNamespace(
        num_reqs=4,
        num_computed_tokens_np=np.array([0, 8192, 300, 0]),
        num_scheduled_tokens=np.array([8192, 1808, 1, 100]),
        prefill_len_np=np.array([10000, 10000, 256, 100]),
    )
    # a first chunk short of its prompt, the chunk that completes it, a decode, a whole short prefill
    assert num_sampled(batch).tolist() == [0, 1, 1, 1]


def test_token_source_draws_ordinary_ids_deterministically():
    from timewarp.integrations.vllm_plugin.host_results import TokenSource

    src = TokenSource.__new__(TokenSource)
    src.lo, src.hi, src.avoid, src._req_hash = 259, 32000, np.array([2, 300]), {}
    pos = np.arange(5000)
    a = src.ids(["req-a"] * 5000, pos)
    assert a.min() >= 259 and a.max() < 32000 and 300 not in a and 2 not in a
    assert (a == src.ids(["req-a"] * 5000, pos)).all()
    assert (a != src.ids(["req-b"] * 5000, pos)).mean() > 0.99
    assert len(set(a.tolist())) > 4000  # spread over the vocabulary, not a constant


def test_the_timelines_forward_parts_count_only_calls_inside_a_forward():
    """timeline.py with TIMEWARP_VLLM_TIMELINE_PARTS=1: a tallied call counts (calls, wall us, CPU us) only between
    a forward's start and its detail; the forward's start resets the counts and wraps Inductor's extern kernels."""
    import time
    from timewarp.integrations.vllm_plugin import timeline as tl
    from torch._inductor.select_algorithm import extern_kernels

    def busy(x):
        t = time.thread_time()
        while time.thread_time() - t < 0.002:
            pass
        return x

    launch = tl._tallied(busy, "triton")
    assert launch(1) == 1                       # outside a forward: passed through, not counted
    tl._forward_start(0)
    assert getattr(extern_kernels.mm, "_timewarp_parts", False)
    assert launch(2) == 2 and launch(3) == 3
    detail = tl._forward_detail(None, None)
    parts = dict(p.split("=") for p in detail.split())
    assert set(parts) == {"piece", "triton", "extern", "attn"} and parts["piece"] == "0/0/0"
    n, wall, cpu = map(int, parts["triton"].split("/"))
    assert n == 2 and wall >= 4000 and cpu >= 3500
    launch(4)                                   # after the forward's detail: not counted
    assert tl._tally["triton"][0] == 2
    tl._forward_start(0)
    assert tl._tally["triton"] == [0, 0, 0]
    tl._forward_detail(None, None)


def test_token_source_with_dummy_weights_samples_the_whole_vocabulary():
    """A randomly initialised model on the real H200 samples from near-flat logits over all 128,256 ids of
    the embedded model; its 32,000-id tokenizer gives no text for 3 in 4 of them (the real completions have
    1.21-1.30 characters per token). The emulated ids must do the same, EOS excepted."""
    from timewarp.integrations.vllm_plugin.host_results import TokenSource

    cfg = SimpleNamespace(hf_text_config=SimpleNamespace(vocab_size=128256), hf_config=SimpleNamespace(eos_token_id=2))
    src = TokenSource(cfg, dummy_weights=True)
    a = src.ids([f"req-{k}" for k in range(20000)], np.arange(20000) % 300)
    assert 2 not in a and a.min() >= 0 and a.max() < 128256
    assert 0.72 < (a >= 32000).mean() < 0.78
    assert (a < 259).any()   # special and byte ids too, as a flat distribution draws them


def test_vllm_serve_and_bench_predict_h200_metrics(tmp_path):
    """The README's main job, small (run twice on one server, --repeat 2): the real H200 gives TPOT 4.86 ms at
    concurrency 1 and 256/128 tokens (predictors/data/h200/vllm_2026-11-29); the emulated engine must report
    FA3, the same KV capacity within 1%, and plausible metrics, with every request complete and no
    unimplemented CUDA call."""
    logs = tmp_path / "logs"
    # the README's command, from the checkout's root, where the source folder timewarp/ would shadow the
    # installed package in every `python -m` child that does not guard against it
    timewarp = str(Path(sys.executable).parent / "timewarp")
    r = subprocess.run([timewarp, "vllm-bench", "--input-len", "256", "--output-len", "32", "--num-prompts", "6",
                        "--concurrency", "2", "--repeat", "2", "--logs", str(logs)],
                       capture_output=True, text=True, timeout=1500, cwd=REPO)
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-5000:])
    result = json.loads((logs / "result.json").read_text())
    assert result["completed"] == 6 and result["failed"] == 0
    assert result["total_output_tokens"] == 6 * 32  # --ignore-eos: exactly the requested lengths
    assert 3.5 < result["mean_tpot_ms"] < 8.0, result["mean_tpot_ms"]
    assert 10 < result["mean_ttft_ms"] < 200, result["mean_ttft_ms"]
    serve = (logs / "serve.log").read_text(errors="replace")
    assert "Using FlashAttention version 3" in serve
    assert "FULL_AND_PIECEWISE" in serve
    kv = int(re.search(r"GPU KV cache size: ([\d,]+) tokens", serve).group(1).replace(",", ""))
    assert abs(kv - 920_192) / 920_192 < 0.01, kv   # the real H200's capacity
    # up to the shutdown: vLLM force-kills its EngineCore then (on the real card too), and the API server's
    # output handler may log the dead engine's traceback
    serving = serve.split("[shutdown]")[0]
    assert "Invalid token id" not in serving and "Traceback" not in serving
    assert "TTFT mean" in r.stdout and "virtual s per wall s" in r.stdout
    # --repeat 2: a second run with other prompts (--seed 1), and each metric's mean and range over both
    again = json.loads((logs / "result-1.json").read_text())
    assert again["completed"] == 6 and again["total_output_tokens"] == 6 * 32
    assert "mean of 2 runs" in r.stdout and "12 completed, 0 failed" in r.stdout
    assert re.search(r"TPOT mean\s+[\d.]+ ms\s+\([\d.]+ \.\. [\d.]+\)", r.stdout), r.stdout


def test_an_interrupt_ends_every_process_of_an_emulated_vllm_server(tmp_path):
    """Issue 5's robustness: `timewarp run -- vllm serve` serving eight long generations, then SIGTERM to the
    launcher alone (a process manager) and, on a fresh server, SIGINT to its process group (Ctrl-C): every
    process of the run (the launcher's descendants and anything carrying its clock) ends within 60 s.
    integrations/bench/robustness.py does it, and kills and names whatever is left."""
    import timewarp.integrations
    script = Path(timewarp.integrations.__file__).parent / "bench" / "robustness.py"
    r = subprocess.run([sys.executable, str(script), "--parts", "interrupt", "--logs", str(tmp_path)],
                       capture_output=True, text=True, timeout=2400)
    assert r.returncode == 0 and "robustness: passed" in r.stdout, (r.stdout[-3000:], r.stderr[-3000:])
    rows = [line for line in r.stdout.splitlines() if line.startswith(("| sigterm-launcher", "| sigint-group"))]
    assert len(rows) == 2 and all(row.endswith("| none |") for row in rows), rows


def test_an_open_loop_benchmark_sends_at_its_rate_on_the_virtual_clock(tmp_path):
    """--request-rate: vLLM's client sleeps between requests (Poisson arrivals, scaled so that the last is sent
    at N / rate seconds) on the virtual clock, and --range-ratio spreads the lengths. Eight requests at 4 a
    second take at least 2 virtual seconds, where all at once they take a fraction of one (cases 22-24 of
    integrations/bench/cases.sh measure such runs against the real H200)."""
    logs = tmp_path / "logs"
    timewarp = str(Path(sys.executable).parent / "timewarp")
    r = subprocess.run([timewarp, "vllm-bench", "--input-len", "256", "--output-len", "16", "--num-prompts", "8",
                        "--request-rate", "4", "--range-ratio", "0.5", "--bench-arg=--save-detailed",
                        "--repeat", "1", "--logs", str(logs)],
                       capture_output=True, text=True, timeout=1500, cwd=REPO)
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-5000:])
    result = json.loads((logs / "result.json").read_text())
    assert result["completed"] == 8 and result["failed"] == 0
    assert result["request_rate"] == 4.0
    assert result["max_concurrency"] is None   # with a rate, no concurrency limit unless one is asked for
    assert 2.0 <= result["duration"] < 4.0, result["duration"]
    # lengths drawn within +-50%: not all alike, and each output exactly its drawn length (--ignore-eos)
    assert len(set(result["output_lens"])) > 1 and all(8 <= n <= 24 for n in result["output_lens"])
    assert result["total_output_tokens"] == sum(result["output_lens"])


def test_a_v1_runner_model_without_a_tokenizer_gets_its_attention_timed_from_the_step(tmp_path):
    """vLLM 0.24 serves Qwen2 models on its V1 runner (Llama ones on the V2 runner). A Qwen2.5-32B-shaped
    folder holds only config.json: vllm-bench serves it with the embedded model's tokenizer. The real H200
    (predictors/data/h200/vllm_32b_2026-12-03a) gave 262,944 KV tokens (CUDA graphs' driver memory counted) and
    19.0 ms per decode step at concurrency 1 (256/128); FA3's kernels take the step context's time on the V1
    runner too (before, their launch's roofline: 16.7 ms per step), and its sampled ids are supplied."""
    logs = tmp_path / "logs"
    timewarp = str(Path(sys.executable).parent / "timewarp")
    r = subprocess.run([timewarp, "vllm-bench", "--model", str(REPO / "integrations" / "models" / "qwen2.5-32b-shape"),
                        "--input-len", "256", "--output-len", "24", "--num-prompts", "2", "--concurrency", "1",
                        "--bench-arg=--save-detailed", "--repeat", "1", "--logs", str(logs)],
                       capture_output=True, text=True, timeout=1500, cwd=REPO)
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-5000:])
    assert "has no tokenizer; using the embedded model's" in r.stderr
    result = json.loads((logs / "result.json").read_text())
    assert result["completed"] == 2 and result["total_output_tokens"] == 2 * 24
    serve = (logs / "serve.log").read_text(errors="replace")
    assert "Qwen2ForCausalLM" in serve and "Using V2 Model Runner" not in serve
    kv = int(re.search(r"GPU KV cache size: ([\d,]+) tokens", serve).group(1).replace(",", ""))
    assert abs(kv - 262_944) / 262_944 < 0.01, kv
    assert "step context not published" not in serve
    assert 16.9 < result["mean_tpot_ms"] < 21.0, result["mean_tpot_ms"]
    # the V1 runner's sampled ids are supplied (drawn over the model's vocabulary, as from dummy weights): the
    # completions have text, as the real run's have ("" when they read back as zeros). Counted over both: 79%
    # of the 152,064 ids decode to nothing with the 32,000-id tokenizer, so one 24-token completion can be
    # a single character (a run gave '"—'); 48 tokens giving 5 characters or fewer is about 1e-4 likely
    assert sum(len(t) for t in result["generated_texts"]) > 5, result["generated_texts"]


def test_a_model_never_calibrated_on_serves_with_the_real_cards_capacity_and_decode_pace(tmp_path):
    """A Qwen3-8B-shaped folder (config only): vLLM's V2 runner, per-head q/k RMSNorm, gate-up and down shapes
    (24576x4096, 4096x12288) with no profile row. Its first real runs (predictors/data/h200/vllm_qwen3_8b_2026-12-03a,
    -03b, after this model's emulation was written): 814,368 and 816,640 KV tokens, 5.25 ms per output token at
    concurrency 1 (256 in, 128 out)."""
    logs = tmp_path / "logs"
    timewarp = str(Path(sys.executable).parent / "timewarp")
    r = subprocess.run([timewarp, "vllm-bench", "--model", str(REPO / "integrations" / "models" / "qwen3-8b-shape"),
                        "--input-len", "256", "--output-len", "48", "--num-prompts", "2", "--concurrency", "1",
                        "--logs", str(logs)], capture_output=True, text=True, timeout=1500, cwd=REPO)
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-5000:])
    result = json.loads((logs / "result.json").read_text())
    assert result["completed"] == 2 and result["total_output_tokens"] == 2 * 48
    serve = (logs / "serve.log").read_text(errors="replace")
    assert "Qwen3ForCausalLM" in serve and "Using V2 Model Runner" in serve
    kv = int(re.search(r"GPU KV cache size: ([\d,]+) tokens", serve).group(1).replace(",", ""))
    assert abs(kv - 815_504) / 815_504 < 0.01, kv
    assert 5.25 * 0.9 < result["mean_tpot_ms"] < 5.25 * 1.1, result["mean_tpot_ms"]


FP8_MM_PROG = """
import json, torch
import vllm._custom_ops as ops
M, K, N = 16, 4096, 6144      # 16 tokens through a Llama-3-8B QKV projection in fp8
a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16).to(torch.float8_e4m3fn)
b = torch.randn(N, K, device="cuda", dtype=torch.bfloat16).to(torch.float8_e4m3fn).t()
sa = torch.ones(1, device="cuda"); sb = torch.ones(1, device="cuda")
out = ops.cutlass_scaled_mm(a, b, sa, sb, torch.bfloat16)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    for _ in range(10):
        out = ops.cutlass_scaled_mm(a, b, sa, sb, torch.bfloat16)
e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
g.replay(); e0.record(); g.replay(); e1.record(); torch.cuda.synchronize()
print(json.dumps({"shape": list(out.shape), "us": e0.elapsed_time(e1) * 100}))
"""


def test_vllms_fp8_scaled_mm_is_timed_as_a_gemm_of_its_shape(tmp_path):
    """vLLM's fp8 linear layers (--quantization fp8) run CUTLASS kernels of its own, not cuBLAS: their shape is
    read from the kernel's parameters (the problem shape leads CUTLASS 3's Params), so the GEMM streams its
    25 MB of fp8 weights instead of taking a launch-size guess (2.6 us, which made an fp8 8B model decode at
    1.6 ms per token). No 8-bit GEMM was measured: the bf16 rows' efficiency at the fp8 rate, said once."""
    prog = tmp_path / "fp8_mm.py"
    prog.write_text(FP8_MM_PROG)
    r = subprocess.run([sys.executable, "-m", "timewarp.integrations.cli", "run", "--", sys.executable, str(prog)],
                       capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res["shape"] == [16, 6144]
    fp8_floor = 6144 * 4096 / 4.3e12 * 1e6 + 2.5      # its weights at the H200's copy rate, plus a launch
    bf16_row = 15.7                                    # the profile's bf16 row of this shape (16 tokens), us
    assert fp8_floor <= res["us"] < bf16_row, res
    assert r.stderr.count("8-bit GEMMs (cudaDataType 28) have no measured rows") == 1, r.stderr[-2000:]


def test_tensor_parallel_2_serves_with_plausible_latency(tmp_path):
    """`vllm serve --tensor-parallel-size 2` under `timewarp run --gpus 2` answers completions, warns that TP
    timing is unvalidated, and a 32-token completion takes a plausible virtual time: vLLM's engine waits
    for its workers by spinning on shared memory with sched_yield, and before sched_yield waited for the
    other processes (shim_c/libc/sleep.c) the spinning's CPU made each completion take 0.4-6.4 s (now
    0.13-0.16 s; about 4 ms per token on the real pair)."""
    log = tmp_path / "serve.log"
    r = subprocess.run([sys.executable, "-m", "timewarp.integrations.cli", "run", "--gpus", "2", "--", "bash",
                        str(REPO / "tests" / "progs" / "vllm_tp2.sh"), str(REPO / "integrations" / "models" /
                        "llama3-8b-shape"), str(log)], capture_output=True, text=True, timeout=900,
                       env={**os.environ, "PY": sys.executable})
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    secs = [float(s) for n, s in re.findall(r"completion (\d+) tokens in ([0-9.]+) s", r.stdout) if n == "32"]
    assert len(secs) == 3, r.stdout[-2000:]
    assert all(0.05 < s < 1.0 for s in secs), secs
    assert "tensor/pipeline parallelism (TP=2, PP=1) runs" in log.read_text()


TRITON_COMPILE = """
import json, sys, time, types
import torch, triton, triton.language as tl
if sys.argv[1] == "inference":    # vLLM's jit_monitor, as it is once a worker's warm-up is over
    mon = types.ModuleType("vllm.triton_utils.jit_monitor")
    mon.is_active = lambda: True
    sys.modules["vllm.triton_utils.jit_monitor"] = mon
from timewarp.integrations.vllm_plugin import triton_jit
triton_jit.install()

@triton.jit
def scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(y_ptr + i, tl.exp(tl.load(x_ptr + i, mask=m)) * 2.0, mask=m)

x = torch.empty(1 << 16, device="cuda"); y = torch.empty_like(x)
scale[(1,)](x, y, x.numel(), BLOCK=1024)         # the first compile in a process: Triton's own start-up
t0 = time.monotonic()
scale[(1,)](x, y, x.numel(), BLOCK=512)
print(json.dumps({"s": time.monotonic() - t0}))
"""


def test_a_triton_kernel_first_compiled_during_inference_costs_a_cold_compile(tmp_path):
    """integrations/vllm_plugin/triton_jit.py: on a fresh host, a Triton kernel that vLLM first runs after its
    warm-up compiles while the engine waits (1.1-1.6 s for a fused-MoE config on the H200's host). This
    machine's Triton cache would make it a cache load: during inference the compile ignores the cache and
    costs its CPU time, as on the real host; before (warm-up), a cache hit stays one."""
    env = {"TRITON_CACHE_DIR": str(tmp_path / "triton")}
    first = run_emulated(TRITON_COMPILE, args=("warmup",), env=env)           # fills the cache
    hit = run_emulated(TRITON_COMPILE, args=("warmup",), env=env)
    cold = run_emulated(TRITON_COMPILE, args=("inference",), env=env)
    for r in (first, hit, cold):
        assert r.rc == 0, r.stderr[-3000:]
    assert hit.result["s"] < 0.3 * first.result["s"]                         # the cache hides the compile
    assert cold.result["s"] > 0.5 * first.result["s"] and cold.result["s"] > 3 * hit.result["s"]
