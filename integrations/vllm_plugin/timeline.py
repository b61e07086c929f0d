"""A per-process timeline of vLLM's serving loop, written the same way on the real GPU and under emulation.

TIMEWARP_VLLM_TIMELINE=DIR makes every vLLM process that imports the wrapped modules append one line per
call to DIR/timeline-PID.tsv:  name  start_ns  end_ns  thread  detail  cpu_ns
with time.perf_counter_ns() (CLOCK_MONOTONIC: one clock for all processes of a machine, the virtual clock
under timewarp). Comparing a real run's file with an emulated run's (predictors/compare_vllm_timeline.py)
says which part of a request's life the emulator gets wrong: API input processing, the engine's handling
of the request, scheduling, the model's launches, waiting for the GPU, output processing. gpu.step lines
give each step's span on the GPU (CUDA events); cpu_ns, the calling thread's CPU time during the call (real
CPU time of the machine it ran on, emulated or not), says whether a call computed or waited.
It needs nothing from timewarp: on a GPU machine it is loaded as a top-level module through vLLM's plugin
entry point (predictors/calibration/h200_vllm_session.sh, STAGE=serve TIMELINE=1).
Cost: a few microseconds per wrapped call.
"""
from __future__ import annotations

import atexit
import gc
import os
import threading
import time

try:
    from ._hooks import wrap_method
except ImportError:  # loaded as a top-level module on a real GPU machine
    from _hooks import wrap_method

_lines: list[str] = []
_lock = threading.Lock()
_path = None


def _flush() -> None:
    global _lines
    with _lock:
        lines, _lines = _lines, []
        n = len(_gc_lines)
        lines += _gc_lines[:n]
        del _gc_lines[:n]
    if lines and _path:
        with open(_path, "a") as f:
            f.write("".join(lines))


def _record(name: str, t0: int, t1: int, detail: str, cpu: int) -> None:
    line = f"{name}\t{t0}\t{t1}\t{threading.get_native_id()}\t{detail}\t{cpu}\n"
    with _lock:
        _lines.append(line)
        full = len(_lines) >= 256
    if full:
        _flush()


def _wrap(module_name: str, cls_name: str, method: str, name: str, detail=None, before=None, after=None) -> None:
    """Time cls_name.method; detail(self, result, *args) -> str describes the call (after it returns);
    before(t0) and after() run around it, untimed."""

    def make(orig):
        def wrapper(self, *args, **kwargs):
            c0, t0 = time.thread_time_ns(), time.perf_counter_ns()
            if before:
                _safe(before, t0)
            result = orig(self, *args, **kwargs)
            if after:
                _safe(after)
            t1, c1 = time.perf_counter_ns(), time.thread_time_ns()
            try:
                _record(name, t0, t1, detail(self, result, *args) if detail else "", c1 - c0)
            except Exception as e:  # a layout this vLLM does not have: record that, never break it
                _record(name, t0, t1, f"detail-error:{type(e).__name__}", c1 - c0)
            return result
        return wrapper

    wrap_method(module_name, cls_name, method, make, "_timewarp_timeline")


def _wrap_async(module_name: str, cls_name: str, method: str, name: str) -> None:
    """Time the coroutine cls_name.method from its call to its return: wall time only (the loop runs other
    tasks meanwhile, so the thread's CPU time says nothing here; cpu is written as -1)."""

    def make(orig):
        async def wrapper(self, *args, **kwargs):
            t0 = time.perf_counter_ns()
            result = await orig(self, *args, **kwargs)
            _record(name, t0, time.perf_counter_ns(), "", -1)
            return result
        return wrapper

    wrap_method(module_name, cls_name, method, make, "_timewarp_timeline")


def _safe(fn, *args) -> None:
    try:
        fn(*args)
    except Exception as e:
        _record("timeline-error", 0, 0, f"{getattr(fn, '__name__', fn)}:{type(e).__name__}:{e}", 0)


# The GPU's span of each step: a CUDA event when the model runner starts a step (the GPU reaches it once
# the work queued before is done) and one after its sampling kernels; their elapsed time, read once the
# second has completed, is written as gpu.step (start = the step's execute start, detail gpu_ms).
_gpu_start: list = []
_gpu_pending: list = []


def _gpu_mark_start(t0: int) -> None:
    import torch
    e = torch.cuda.Event(enable_timing=True)
    e.record()
    _gpu_start[:] = [(e, t0)]


def _gpu_mark_end() -> None:
    import torch
    if not _gpu_start:
        return
    (e0, t0), = _gpu_start
    _gpu_start.clear()
    e1 = torch.cuda.Event(enable_timing=True)
    e1.record()
    _gpu_pending.append((e0, e1, t0))
    while _gpu_pending and _gpu_pending[0][1].query():
        a, b, t = _gpu_pending.pop(0)
        _record("gpu.step", t, t, f"gpu_ms={a.elapsed_time(b):.4f}", 0)


# Under emulation, the operations a step issued to the GPU's stream queues (the shim's count; a real run has
# no such count and records none)
_ops_at_start: list = []
_ops_fn: list = []   # [the shim's tw_ops_queued, or None], looked up once


def _ops_queued() -> int | None:
    if not _ops_fn:
        try:
            import ctypes
            f = ctypes.CDLL(None).tw_ops_queued
            f.restype, f.argtypes = ctypes.c_uint64, [ctypes.c_int]
        except (OSError, AttributeError):
            f = None
        _ops_fn.append(f)
    if _ops_fn[0] is None:
        return None
    import torch
    return _ops_fn[0](torch.cuda.current_device())


def _execute_start(t0: int) -> None:
    _gpu_mark_start(t0)
    _ops_at_start[:] = [_ops_queued()]


# The parts of a forward outside CUDA graphs (TIMEWARP_VLLM_TIMELINE_PARTS=1): model.forward's detail gets, for
# each kind of call inside it, the count and the summed wall and thread-CPU microseconds: Inductor's compiled
# pieces (vLLM's PiecewiseBackend), within them the Triton launches (CachingAutotuner.run) and the extern
# kernels (extern_kernels.mm and the like: cuBLAS), and the attention layers (FlashAttentionImpl.forward).
# Summed, not written one by one: a forward makes hundreds of such calls. Costs about 1 us per call counted.
_PARTS = ("piece", "triton", "extern", "attn")
_tally = {k: [0, 0, 0] for k in _PARTS}
_in_forward = [False]


def _tallied(orig, key: str):
    def wrapper(*args, **kwargs):
        if not _in_forward[0]:
            return orig(*args, **kwargs)
        c0, t0 = time.thread_time_ns(), time.perf_counter_ns()
        try:
            return orig(*args, **kwargs)
        finally:
            t1, c1 = time.perf_counter_ns(), time.thread_time_ns()
            n = _tally[key]
            n[0] += 1
            n[1] += t1 - t0
            n[2] += c1 - c0
    return wrapper


def _forward_start(t0: int) -> None:
    for n in _tally.values():
        n[:] = [0, 0, 0]
    _in_forward[0] = True
    try:  # the generated code looks extern_kernels' functions up at each call: wrap them in place, once
        from torch._inductor.select_algorithm import extern_kernels
    except ImportError:
        return
    for name, fn in list(vars(extern_kernels).items()):
        if callable(fn) and not getattr(fn, "_timewarp_parts", False):
            w = _tallied(fn, "extern")
            w._timewarp_parts = True
            setattr(extern_kernels, name, w)


def _forward_detail(model, out, *args) -> str:
    _in_forward[0] = False
    return " ".join(f"{k}={n[0]}/{n[1] // 1000}/{n[2] // 1000}" for k, n in _tally.items())


def _wrap_parts() -> None:
    for mod, cls, meth, key in (("vllm.compilation.piecewise_backend", "PiecewiseBackend", "__call__", "piece"),
                                ("torch._inductor.runtime.triton_heuristics", "CachingAutotuner", "run", "triton"),
                                ("vllm.v1.attention.backends.flash_attn", "FlashAttentionImpl", "forward", "attn")):
        wrap_method(mod, cls, meth, lambda orig, key=key: _tallied(orig, key), "_timewarp_parts")


def _execute_detail(runner, out, *args) -> str:
    n0, n1 = (_ops_at_start or [None])[0], _ops_queued()
    return f"ops={n1 - n0}" if n0 is not None and n1 is not None else ""


def _sched_detail(sched, out, *args) -> str:
    new = [len(r.prompt_token_ids or ()) for r in out.scheduled_new_reqs]
    return (f"tokens={out.total_num_scheduled_tokens} reqs={len(out.num_scheduled_tokens)} "
            f"new={len(new)} new_prompt={sum(new)} waiting={len(sched.waiting)} running={len(sched.running)}")


def _request_detail(core, out, request_type, *args) -> str:
    return f"type={getattr(request_type, 'name', request_type)}"


def _outputs_detail(proc, out, outputs, *args) -> str:
    return f"n={len(outputs)}"


def _update_detail(sched, out, scheduler_output, *args) -> str:
    return f"tokens={scheduler_output.total_num_scheduled_tokens}"


def register() -> None:
    """Install the timeline if TIMEWARP_VLLM_TIMELINE names a directory (the plugin calls this in every
    process; a GPU machine's entry point calls it directly)."""
    global _path
    out = os.environ.get("TIMEWARP_VLLM_TIMELINE")
    if not out or _path:
        return
    os.makedirs(out, exist_ok=True)
    _path = os.path.join(out, f"timeline-{os.getpid()}.tsv")
    atexit.register(_flush)
    threading.Thread(target=_flush_every, args=(2.0,), daemon=True, name="tw-timeline").start()
    core, sched = "vllm.v1.engine.core", "vllm.v1.core.sched.scheduler"
    runner = "vllm.v1.worker.gpu.model_runner"
    gc.callbacks.append(_gc_callback)
    _wrap(core, "EngineCoreProc", "_handle_client_request", "core.request", _request_detail)
    _wrap(core, "EngineCoreProc", "_process_engine_step", "core.step")
    # a request's decoding in the EngineCore's input thread, before it goes on the busy loop's queue
    _wrap(core, "EngineCoreProc", "preprocess_add_request", "core.input")
    _wrap(sched, "Scheduler", "schedule", "sched.schedule", _sched_detail)
    _wrap(sched, "Scheduler", "update_from_output", "sched.update", _update_detail)
    _wrap(runner, "GPUModelRunner", "execute_model", "runner.execute", _execute_detail, before=_execute_start)
    _wrap(runner, "GPUModelRunner", "sample_tokens", "runner.sample", after=_gpu_mark_end)
    # execute_model's parts, to tell where a step's host time goes: new requests' state, the input
    # batch, the attention metadata, and the model's forward (its launches)
    _wrap(runner, "GPUModelRunner", "add_requests", "runner.add")
    _wrap(runner, "GPUModelRunner", "prepare_inputs", "runner.inputs")
    _wrap(runner, "GPUModelRunner", "prepare_attn", "runner.attn")
    _wrap("vllm.v1.worker.gpu.model_states.default", "DefaultModelState", "prepare_attn", "runner.attn_meta")
    parts = os.environ.get("TIMEWARP_VLLM_TIMELINE_PARTS") == "1"
    if parts:
        _wrap_parts()
    fwd = dict(detail=_forward_detail, before=_forward_start) if parts else {}
    _wrap("vllm.model_executor.models.llama", "LlamaForCausalLM", "forward", "model.forward", **fwd)
    # the V1 runner (vLLM 0.24 runs Qwen2 and other non-Llama models on it): its step, sampling, the requests'
    # state and the input batch, under the same names
    v1 = "vllm.v1.worker.gpu_model_runner"
    _wrap(v1, "GPUModelRunner", "execute_model", "runner.execute", _execute_detail, before=_execute_start)
    _wrap(v1, "GPUModelRunner", "sample_tokens", "runner.sample", after=_gpu_mark_end)
    _wrap(v1, "GPUModelRunner", "_update_states", "runner.add")
    _wrap(v1, "GPUModelRunner", "_prepare_inputs", "runner.inputs")
    _wrap("vllm.model_executor.models.qwen2", "Qwen2ForCausalLM", "forward", "model.forward", **fwd)
    # a request's arrival in the API server (its handler is a coroutine function: the call returns at once)
    _wrap("vllm.entrypoints.openai.completion.serving", "OpenAIServingCompletion", "create_completion",
          "api.request")
    # the prompt's tokenization, in the API server's one-thread pool (integrations/executor_clock.py)
    _wrap("vllm.renderers.base", "BaseRenderer", "_encode", "api.tokenize")
    # the same tokenization from the loop's side: handed to the pool, then its result taken back (the pool
    # runs in order, so the k-th of these holds the k-th api.tokenize: the wait before it started, for
    # Python's GIL or for the pieces queued ahead, and the wait for its result to be picked up)
    _wrap_async("vllm.renderers.base", "BaseRenderer", "_tokenize_prompt_async", "api.tokenize_async")
    _wrap("vllm.v1.engine.input_processor", "InputProcessor", "process_inputs", "api.inputs")
    _wrap("vllm.v1.engine.output_processor", "OutputProcessor", "process_outputs", "api.outputs",
          _outputs_detail)


# Python's cyclic garbage collector: its pauses are host time of whichever phase triggers them, and a heap
# that differs between the real and the emulated process makes them differ.
_gc_start: dict[int, tuple[int, int]] = {}
_gc_lines: list[str] = []   # appended without a lock (a list append is atomic)


def _gc_callback(phase: str, info: dict) -> None:
    tid = threading.get_native_id()
    if phase == "start":
        _gc_start[tid] = (time.perf_counter_ns(), time.thread_time_ns())
    elif tid in _gc_start:
        t0, c0 = _gc_start.pop(tid)
        # not _record: a collection can start inside _record, with _lock held by this very thread
        _gc_lines.append(f"gc\t{t0}\t{time.perf_counter_ns()}\t{tid}\tgen={info.get('generation')} "
                         f"collected={info.get('collected')}\t{time.thread_time_ns() - c0}\n")


def _flush_every(seconds: float) -> None:
    # real seconds are not needed: under emulation this sleeps on the virtual clock, which is fine
    while True:
        time.sleep(seconds)
        _flush()
