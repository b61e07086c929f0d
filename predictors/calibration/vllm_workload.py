"""vLLM 0.24.0's own kernels on a real GPU, for the kernel recorder (integrations/record.py): offline
`vllm.LLM(load_format="dummy")` with vLLM's defaults (torch.compile/Inductor, FULL_AND_PIECEWISE CUDA graphs,
FlashAttention 3, prefix caching, chunked prefill, async scheduling, the V2 model runner), run in this process
(VLLM_ENABLE_V1_MULTIPROCESSING=0) so that the profiler sees every kernel: Inductor's Triton kernels, FA3,
vLLM's custom ops (reshape_and_cache_flash, rotary, ...), the sampling kernels and the cuBLAS GEMMs, including
those replayed from CUDA graphs.

What runs. Engine start and a small warm-up generate are not recorded. Then, inside the recorder's window:
  decode      B requests with 64-token prompts and 16 output tokens each, for B over the CUDA-graph capture
              sizes (1, 2, 4, ..., 256, 320, 384, 512): after the first step(s) of prefill every step is a
              uniform decode batch of B, i.e. a replay of the FULL graph of size B;
  decode_ctx  the same at serving contexts (prompts of 1024 and 2048 tokens, B = 1, 8, 32, 128): attention
              time grows with the context while FA3's launch does not change (a persistent grid of 132 CTAs
              whatever the batch and lengths), so only the labels (B, in, out) say what an FA3 row measured;
  prefill     one request at a time, prompt lengths 16 .. 8000, 1 output token, 3 times each (lengths up to
              512 run the PIECEWISE graphs, longer ones Inductor's kernels launched eagerly);
  mixed       64 requests of 2048 tokens and 16 outputs at once: chunked prefill mixes with decodes at the
              token budget (8192, `vllm serve`'s default on an H200; the LLM class's would be 16384).
Every request has its own random prompt ids (< 32000, as the random dataset of `vllm bench serve` draws them),
so prefix caching never hits; ignore_eos=True and fixed max_tokens make every request run its full length.
Sampling uses the model's default parameters (temperature 1, as `vllm bench serve` requests get them from
the server); --greedy samples greedily. Each phase runs under torch.profiler.record_function("phase:NAME") and
each case inside it under record_function("phase:NAME|B=..|in=..|out=..|rep=.."), so in kernels.parquet
`label_stack` holds both and `label` is the case (or, for kernels Inductor launches eagerly, Inductor's own
"## Call CompiledFxGraph ..." span, the case being the one before it in label_stack).

The window: under the recorder with `--window program`, this script opens the profiled window after the
warm-up and closes it after the last phase (sys.modules["timewarp_record_window"], see record.py's
docstring). Without that module (plain python, or `timewarp run`) it just runs. With an older record.py, use
--delay/--duration and the phase start times this script prints instead.

On the H200 (from the repo root, vLLM 0.24.0 installed; nothing else needs setting):
    HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 python3 integrations/record.py --out OUT --window program \\
        --no-shapes -- predictors/calibration/vllm_workload.py --model integrations/models/llama3-8b-shape
Use the device's 600 s limit (timeout_s=600) and do not pass --keep-trace (the raw trace is several hundred MB).
Expected on the H200: ~20 s of imports, ~150 s of engine start (compile, CUDA-graph capture), a few seconds of
warm-up, ~30-60 s of recorded phases (about 20 s of GPU work, plus vLLM's host work and the profiler's
overhead), then 1.5-3 min for the recorder to export and parse kineto's trace: 5-8 min in all. Under the
emulator (local --quick check) a step launches ~375 kernels and ~1,100 host-side aten ops, so the default
phases (~530 engine steps: decode ~265, decode_ctx ~185, prefill 45, mixed ~32) give ~200k kernel rows (below
the few hundred thousand kineto's CUPTI buffers hold; a kernels.parquet of ~5-15 MB) and ~600k host events in
the trace, which is what makes the export slow. If the run gets near the limit, record the phases in two runs
(--phases decode,prefill / --phases decode_ctx,mixed; each pays the engine start again). --quick shrinks
every phase to a few cases (25 steps) for a local check under `timewarp run`; --warm-phases runs the phases
once before the window as well (+~30 s), keeping first-use effects (lazy Triton JIT, allocator growth) out.

How the rows are used: the emulator looks kernels up in the recorded profile by (demangled name, grid,
block): an exact match gives the median measured duration, otherwise it interpolates over the number of
blocks among rows with the same name and block; kernels with neither fall back to the roofline. The phase
labels keep decode, prefill and mixed steps apart for validation (e.g. per-step sums against the emulator's
predicted steps). FA3's rows cannot be told apart by key (grid 132 always): fit them against the labels'
batch and lengths (the emulator's step-context layer), not by exact match.
"""
import argparse
import json
import os
import random
import sys
import time

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")

T0 = time.perf_counter()
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_MODEL = os.path.normpath(os.path.join(HERE, "..", "..", "integrations", "models", "llama3-8b-shape"))
ALL_PHASES = ("decode", "decode_ctx", "prefill", "mixed")
DECODE_SIZES = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 320, 384, 512)
PREFILL_LENS = (16, 32, 64, 128, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8000)


def log(msg):
    print(f"[vllm_workload {time.perf_counter() - T0:8.1f}s] {msg}", flush=True)


def ints(s):
    return tuple(int(x) for x in s.split(",") if x.strip())


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description="vLLM's kernels over decode, prefill and mixed steps, for "
                                             "integrations/record.py (see the module docstring)")
    ap.add_argument("--model", default=DEFAULT_MODEL, help="model folder (default: the Llama-3-8B shape)")
    ap.add_argument("--phases", default=",".join(ALL_PHASES), help=f"comma list, in order, of {ALL_PHASES}")
    ap.add_argument("--quick", action="store_true", help="a few small cases per phase (local check)")
    ap.add_argument("--decode-sizes", default=None,
                    help="batch sizes of phase decode, comma list or 'all' (every CUDA-graph capture size)")
    ap.add_argument("--decode-in", type=int, default=64, help="prompt tokens in phase decode")
    ap.add_argument("--decode-out", type=int, default=16, help="output tokens per request in decode phases")
    ap.add_argument("--ctx-lens", default="1024,2048", help="prompt tokens of phase decode_ctx")
    ap.add_argument("--ctx-sizes", default="1,8,32,128", help="batch sizes of phase decode_ctx")
    ap.add_argument("--prefill-lens", default=",".join(map(str, PREFILL_LENS)), help="prompt tokens, phase prefill")
    ap.add_argument("--prefill-reps", type=int, default=3, help="requests per prefill length (one at a time)")
    ap.add_argument("--mixed", default="64x2048", help="phase mixed: REQUESTSxPROMPT_TOKENS")
    ap.add_argument("--mixed-out", type=int, default=16, help="output tokens per request in phase mixed")
    ap.add_argument("--greedy", action="store_true", help="temperature 0 (default: the model's defaults)")
    ap.add_argument("--max-num-batched-tokens", type=int, default=8192,
                    help="token budget per step (default 8192 = `vllm serve` on an H200; 0 = the LLM class's)")
    ap.add_argument("--engine-arg", action="append", default=[], metavar="KEY=VALUE",
                    help="extra vllm.LLM keyword (VALUE parsed as JSON where it parses), repeatable")
    ap.add_argument("--warm-phases", action="store_true",
                    help="also run every selected phase once before the window (first-use effects stay out)")
    ap.add_argument("--no-window", action="store_true", help="do not open/close the recorder's window")
    ap.add_argument("--seed", type=int, default=0, help="seed of the prompt ids")
    a = ap.parse_args(argv)
    a.phases = [p.strip() for p in a.phases.split(",") if p.strip()]
    bad = [p for p in a.phases if p not in ALL_PHASES]
    if bad:
        ap.error(f"unknown phase(s) {bad}; choose from {ALL_PHASES}")
    if a.quick:
        a.decode_sizes = a.decode_sizes or "1,8,64"
        a.decode_out = min(a.decode_out, 4)
        a.ctx_lens, a.ctx_sizes = "1024", "4"
        a.prefill_lens, a.prefill_reps = "64,1024,4000", 1
        a.mixed, a.mixed_out = "8x2048", 4
    a.ctx_lens, a.ctx_sizes, a.prefill_lens = ints(a.ctx_lens), ints(a.ctx_sizes), ints(a.prefill_lens)
    n, _, ln = a.mixed.partition("x")
    a.mixed = (int(n), int(ln))
    return a


class Workload:
    def __init__(self, args):
        import torch
        from vllm import LLM, SamplingParams
        from vllm.inputs import TokensPrompt
        self.torch, self.SamplingParams, self.TokensPrompt = torch, SamplingParams, TokensPrompt
        self.args = args
        self.rng = random.Random(args.seed)
        kw = dict(model=args.model, load_format="dummy", seed=args.seed)
        if args.max_num_batched_tokens:
            kw["max_num_batched_tokens"] = args.max_num_batched_tokens
        for kv in args.engine_arg:
            k, _, v = kv.partition("=")
            try:
                v = json.loads(v)
            except ValueError:
                pass
            kw[k.replace("-", "_")] = v
        log(f"engine start: vllm.LLM({kw})")
        t = time.perf_counter()
        self.llm = LLM(**kw)
        self.engine_start_s = time.perf_counter() - t
        cfg = self.llm.llm_engine.vllm_config
        self.max_model_len = cfg.model_config.max_model_len
        self.capture_sizes = list(cfg.compilation_config.cudagraph_capture_sizes or [])
        self.max_num_seqs = cfg.scheduler_config.max_num_seqs
        log(f"engine started in {self.engine_start_s:.1f}s: max_model_len {self.max_model_len}, max_num_seqs "
            f"{self.max_num_seqs}, max_num_batched_tokens {cfg.scheduler_config.max_num_batched_tokens}, "
            f"cudagraph_mode {cfg.compilation_config.cudagraph_mode}, {len(self.capture_sizes)} capture sizes "
            f"(max {max(self.capture_sizes, default=0)})")
        self.steps = 0
        self._count_steps()
        self.base_params = self.llm.get_default_sampling_params()

    def _count_steps(self):
        """Count the engine steps that executed the model (in-process engine only; diagnostics)."""
        try:
            core = self.llm.llm_engine.engine_core.engine_core
            inner = core.step_fn

            def step_fn(*a, **k):
                out = inner(*a, **k)
                if isinstance(out, tuple) and len(out) == 2 and out[1]:
                    self.steps += 1
                return out
            core.step_fn = step_fn
        except AttributeError:
            log("engine steps not counted (no in-process EngineCore?)")

    def prompt(self, n):
        n = max(1, min(n, self.max_model_len - 1))
        return self.TokensPrompt(prompt_token_ids=[self.rng.randrange(3, 32000) for _ in range(n)])

    def params(self, max_tokens):
        p = self.base_params.clone() if hasattr(self.base_params, "clone") else self.SamplingParams()
        p.max_tokens, p.ignore_eos = max_tokens, True
        if self.args.greedy:
            p.temperature = 0.0
        return p

    def run(self, label, n_req, n_in, n_out):
        """One generate() of n_req requests of n_in prompt tokens and n_out output tokens each."""
        n_in = min(n_in, self.max_model_len - n_out)
        prompts = [self.prompt(n_in) for _ in range(n_req)]
        s0, t = self.steps, time.perf_counter()
        with self.torch.profiler.record_function(label):
            outs = self.llm.generate(prompts, self.params(n_out), use_tqdm=False)
        dt = time.perf_counter() - t
        got = sum(len(o.outputs[0].token_ids) for o in outs)
        if got != n_req * n_out:
            log(f"  warning: {label}: {got} output tokens, expected {n_req * n_out}")
        return dict(case=label, requests=n_req, prompt_tokens=n_in, output_tokens=n_out, s=round(dt, 4),
                    steps=self.steps - s0)

    def cases(self, phase):
        a = self.args
        if phase == "decode":
            if a.decode_sizes == "all":
                sizes = self.capture_sizes
            else:
                sizes = ints(a.decode_sizes) if a.decode_sizes else DECODE_SIZES
            for b in sizes:
                if b <= self.max_num_seqs:
                    yield f"B={b}|in={a.decode_in}|out={a.decode_out}", b, a.decode_in, a.decode_out
        elif phase == "decode_ctx":
            for n_in in a.ctx_lens:
                for b in a.ctx_sizes:
                    yield f"B={b}|in={n_in}|out={a.decode_out}", b, n_in, a.decode_out
        elif phase == "prefill":
            for n_in in a.prefill_lens:
                for r in range(a.prefill_reps):
                    yield f"B=1|in={n_in}|out=1|rep={r}", 1, n_in, 1
        elif phase == "mixed":
            n, n_in = a.mixed
            yield f"B={n}|in={n_in}|out={a.mixed_out}", n, n_in, a.mixed_out

    def phase(self, name, quiet=False):
        torch = self.torch
        torch.cuda.synchronize()
        s0, t = self.steps, time.perf_counter()
        rows = []
        with torch.profiler.record_function(f"phase:{name}"):
            for case, b, n_in, n_out in self.cases(name):
                r = self.run(f"phase:{name}|{case}", b, n_in, n_out)
                rows.append(r)
                if not quiet:
                    log(f"  {r['case']}: {r['s'] * 1e3:.1f} ms, {r['steps']} steps")
        torch.cuda.synchronize()
        dt = time.perf_counter() - t
        log(f"phase {name}: {dt:.2f}s wall, {self.steps - s0} steps, {len(rows)} cases")
        return dict(phase=name, s=round(dt, 4), steps=self.steps - s0, cases=rows)


def main(argv=None):
    args = parse_args(argv)
    window = None if args.no_window else sys.modules.get("timewarp_record_window")
    log(f"phases {args.phases}; model {args.model}; recorder window: "
        f"{'controlled here' if window else 'not controlled here'}")
    wl = Workload(args)

    t = time.perf_counter()
    wl.run("warmup", 4, 64, 4)
    wl.run("warmup", 1, 1024, 2)
    if args.warm_phases:
        for name in args.phases:
            wl.phase(name, quiet=True)
    wl.torch.cuda.synchronize()
    warm_s = time.perf_counter() - t
    log(f"warm-up: {warm_s:.1f}s")

    if window:
        window.start()
        log("recorder window opened")
    enabled = getattr(wl.torch.autograd, "_profiler_enabled", lambda: None)()
    log(f"phases start (torch profiler enabled: {enabled})")
    t = time.perf_counter()
    s0 = wl.steps
    results = [wl.phase(name) for name in args.phases]
    wl.torch.cuda.synchronize()
    rec_s = time.perf_counter() - t
    if window:
        window.stop()
        log("recorder window closed")
    summary = dict(engine_start_s=round(wl.engine_start_s, 2), warmup_s=round(warm_s, 2),
                   phases_s=round(rec_s, 2), steps=wl.steps - s0, phases=results,
                   capture_sizes=wl.capture_sizes, window_controlled=bool(window))
    for r in results:
        log(f"  {r['phase']:<11} {r['s']:8.2f}s  {r['steps']:5d} steps  {len(r['cases'])} cases")
    log(f"phases: {rec_s:.2f}s, {wl.steps - s0} steps")
    print("vllm_workload summary: " + json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
