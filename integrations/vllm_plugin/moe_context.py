"""Each fused mixture-of-experts launch's shape, handed to the predictor just before the launch.

vLLM's Triton MoE backend (`fused_moe.invoke_fused_moe_triton_kernel`) runs one `fused_moe_kernel` grid over
all the experts a batch routes to; the routing sits in device memory, and the grid (padded rows x N tiles)
says little about the work. Timed by its launch size, a Qwen1.5-MoE-A2.7B-shaped model's expert GEMMs were
25% of its GPU time at the roofline's guess. This hands the launch's facts (tokens, top_k, experts, the
weights' [N, K], BLOCK_SIZE_M, dtypes) to the shim (shim_c/core/moe.c), which times the kernel as the batched
GEMM over the experts the batch touches. Captured CUDA graphs keep the annotation of their capture.
"""
from __future__ import annotations

import ctypes
import logging

log = logging.getLogger("timewarp.vllm")

_core = ctypes.CDLL(None)   # libtimewarp.so is preloaded: its symbols are global
_next = _core.tw_moe_next
_next.argtypes = [ctypes.c_char_p, ctypes.c_int64, ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64,
                  ctypes.c_int, ctypes.c_int, ctypes.c_int]
_next.restype = None

# torch dtype name -> cudaDataType (library_types.h)
_CUDA_TYPE = {"bfloat16": 14, "float16": 2, "float32": 0, "float8_e4m3fn": 28, "float8_e5m2": 29, "int8": 3,
              "uint8": 8}


def _type(t) -> int:
    return _CUDA_TYPE.get(str(t.dtype).replace("torch.", ""), 14)


def announce(A, B, top_k: int, config: dict) -> None:
    """A: the activations [tokens, K]; B: the experts' weights [E, N, K]."""
    _next(b"fused_moe_kernel", int(A.size(0)), int(top_k), int(B.size(0)), int(B.size(1)), int(B.size(2)),
          int(config.get("BLOCK_SIZE_M", 16)), _type(B), _type(A))


def _patch(module) -> None:
    from ._hooks import _uncharged
    orig = module.invoke_fused_moe_triton_kernel
    if getattr(orig, "_timewarp", False):
        return

    def invoke_fused_moe_triton_kernel(A, B, C, A_scale, B_scale, topk_weights, sorted_token_ids, expert_ids,
                                       num_tokens_post_padded, mul_routed_weight, top_k, config, *args, **kwargs):
        try:
            _uncharged(announce, A, B, top_k, config)   # the emulator's bookkeeping, not the program's host work
        except Exception:  # it must not break the program either
            log.exception("timewarp: fused MoE shape not announced")
        return orig(A, B, C, A_scale, B_scale, topk_weights, sorted_token_ids, expert_ids, num_tokens_post_padded,
                    mul_routed_weight, top_k, config, *args, **kwargs)

    invoke_fused_moe_triton_kernel._timewarp = True
    invoke_fused_moe_triton_kernel.__wrapped__ = orig
    module.invoke_fused_moe_triton_kernel = invoke_fused_moe_triton_kernel


def install() -> None:
    from ._hooks import after_import
    # the function's own module calls it by its global name; the Triton experts' module imports it by name
    after_import("vllm.model_executor.layers.fused_moe.fused_moe", _patch)
    after_import("vllm.model_executor.layers.fused_moe.experts.triton_moe", _patch)
