"""timewarp's vLLM plugin: what an emulated vLLM needs from outside its own code.

vLLM loads it in every process through its `vllm.general_plugins` entry point (pyproject.toml); it does
nothing unless the process runs under timewarp (TIMEWARP_GPU set and the shim loaded). Under emulation it
- supplies the results the host reads back from the GPU every step (sampled token ids and the number of
  tokens each request sampled), which kernels that never run cannot produce (host_results.py);
- hands the predictor each step's attention work (per-request query and context lengths), which decides
  FlashAttention's time inside and outside CUDA graphs (step_context.py);
- stands in for FlashInfer's sampling module, which vLLM would otherwise JIT-compile with nvcc at start-up
  (flashinfer_sampling.py).
In any process, emulated or not, TIMEWARP_VLLM_TIMELINE=DIR writes a timeline of the serving loop
(timeline.py).
vLLM's files are never edited: the plugin wraps methods of vLLM's classes at load time.
"""
from __future__ import annotations

import ctypes
import logging
import os
import sys
import threading

log = logging.getLogger("timewarp.vllm")

_done = False


def emulated() -> bool:
    """This process runs on timewarp's fake CUDA stack."""
    if not os.environ.get("TIMEWARP_GPU"):
        return False
    try:
        return hasattr(ctypes.CDLL(None), "tw_mem_lookup")
    except OSError:
        return False


def _drop_shadow() -> None:
    """vLLM needs no shadow of small PyTorch results (integrations/torch_shadow.py): the values it reads back
    from the GPU are the ones host_results.py supplies. The shadow's Python dispatch of every eager aten
    operation made the EngineCore's host work 40-120% slower on the virtual clock than on the real host
    (forgiveness calibrated on large operations did not remove it), and the emulation 1.3-1.7x slower
    (predictors/compare_vllm_timeline.py against the real H200's timeline). Processes this one starts (the
    EngineCore, spawned) never install it; this one drops it if it is installed in this thread.
    TIMEWARP_VLLM_SHADOW=1 keeps it (to compare)."""
    if os.environ.get("TIMEWARP_VLLM_SHADOW") == "1":
        return
    os.environ["TIMEWARP_SHADOW"] = "0"
    shadow = sys.modules.get("timewarp_torch_shadow")
    if shadow is not None and threading.current_thread() is threading.main_thread():
        if shadow.uninstall():
            log.info("timewarp: shadow of small PyTorch results dropped (vLLM's results come from the plugin)")


def register() -> None:
    """The `vllm.general_plugins` entry point (vLLM may call it several times per process)."""
    global _done
    from . import timeline
    timeline.register()  # real or emulated: it is how the two are compared
    if _done or not emulated():
        return
    _done = True
    _drop_shadow()
    from . import flashinfer_sampling, host_results, input_clock, moe_context, step_context, triton_jit
    from ._hooks import after_method
    flashinfer_sampling.install()
    host_results.install()
    from .. import executor_clock, native_price
    executor_clock.install()   # the API server's tokenizer pool
    native_price.install()     # its tokenizer's Rust, priced by the native pace
    step_context.install()
    moe_context.install()   # fused MoE launches' shapes
    triton_jit.install()    # Triton kernels first run during inference compile cold
    input_clock.install()   # the EngineCore's input thread
    # EngineCore.__init__ loads the plugins itself, then sizes the KV caches: the first hook that fires there
    after_method("vllm.v1.engine.core", "EngineCore", "_initialize_kv_caches", _warn_parallel,
                 "the parallelism warning")


def _warn_parallel(core, _result, *args, **kwargs) -> None:
    """Tensor and pipeline parallelism run, but their timing is not calibrated: one comparison with a real
    pair (TP=2) found it well off. Say so where the user reads the engine's start-up (issue 5: a TP>1
    request works or fails clearly, never a silently wrong number)."""
    pc = core.vllm_config.parallel_config
    tp, pp = pc.tensor_parallel_size, pc.pipeline_parallel_size
    if tp > 1 or pp > 1:
        log.warning("timewarp: tensor/pipeline parallelism (TP=%d, PP=%d) runs, but its predicted timing is not "
                    "calibrated: against two real H200s at TP=2 (four cases), throughput came out within 3.3%%, TPOT "
                    "between 16%% low and 1%% high and TTFT 0-77%% high (docs/LIMITATIONS.md, \"Tensor "
                    "parallelism\"): treat its latencies as unvalidated.", tp, pp)
