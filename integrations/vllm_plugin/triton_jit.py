"""A Triton kernel that first runs during inference is compiled then, as on a freshly started real server.

vLLM's own Triton kernels are compiled at first use of each specialisation (its constexprs: for the fused MoE
kernel, the config that the batch's token count picks). Warm-up covers the CUDA-graph sizes and the largest
batch; a prefill of another size compiles a new one while every request waits: on the real H200 a step of a
Qwen3-30B-A3B-shaped model stalled 1.56 s (vllm_qwen3_30b_2026-12-04, case 4; vLLM's jit_monitor warns
"Triton kernel JIT compilation during inference: fused_moe_kernel"), one of Qwen1.5-MoE's 1.16 s
(vllm_moe_2026-12-04, case 2), which is most of those cases' TTFT. The emulator compiles the same kernels at
the same moments, but this machine's Triton cache usually has them from an earlier run, and a cache hit costs
a millisecond. So, once vLLM's jit_monitor says warm-up is over, each such compile ignores the cache
(Triton's always_compile) and its CPU time is charged: the thread's at the host pace, as all its Python, and
the CPU time of the compiler's child processes (ptxas) on top, at the same pace. Measured here: the fused MoE
kernel's cold compile takes 1.3-1.4 s of CPU (0.9-1.1 in process, 0.3-0.4 in ptxas), against the real host's
1.1-1.5 s stalls.
"""
from __future__ import annotations

import ctypes
import logging
import resource
import sys

log = logging.getLogger("timewarp.vllm")

_core = ctypes.CDLL(None)   # libtimewarp.so is preloaded: its symbols are global
_core.tw_charge_add.argtypes = [ctypes.c_uint64]
_core.tw_charge_add.restype = ctypes.c_uint64
_core.tw_clock_cpu_factor.restype = ctypes.c_double


def _inference() -> bool:
    """vLLM's own test: its jit_monitor is activated at the end of a worker's warm-up."""
    mon = sys.modules.get("vllm.triton_utils.jit_monitor")
    return bool(mon is not None and mon.is_active())


def _children_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _patch(module) -> None:
    JIT = module.JITFunction
    orig = JIT._do_compile
    if getattr(orig, "_timewarp", False):
        return
    from triton import knobs

    def _do_compile(self, key, signature, device, constexprs, options, attrs, warmup):
        if warmup or not _inference():
            return orig(self, key, signature, device, constexprs, options, attrs, warmup)
        c0 = _children_cpu_s()
        with knobs.compilation.scope():
            knobs.compilation.always_compile = True
            kernel = orig(self, key, signature, device, constexprs, options, attrs, warmup)
        children = _children_cpu_s() - c0
        if children > 0:
            _core.tw_charge_add(int(children * 1e9 * _core.tw_clock_cpu_factor()))
        log.info("timewarp: Triton compiled %s during inference, cold as on a fresh host (%.2f s in ptxas)",
                 getattr(self, "__name__", self), children)
        return kernel

    _do_compile._timewarp = True
    _do_compile.__wrapped__ = orig
    JIT._do_compile = _do_compile


def install() -> None:
    from ._hooks import after_import
    after_import("triton.runtime.jit", _patch)
