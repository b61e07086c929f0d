"""A stand-in for FlashInfer's top-k/top-p sampling kernels.

vLLM samples with FlashInfer when a request sets top_k or top_p (and always in its warm-up). FlashInfer
builds that module with nvcc the first time it is called (`flashinfer.jit`), which needs a CUDA toolkit the
emulating machine does not have, and would only produce kernels that never run. The stand-in launches one
reduction over the same logits (an argmax: a memory-bound pass over [batch, vocab], as FlashInfer's first
pass is) so that the step is charged a sampling kernel; the token ids themselves come from host_results.
Its time is that of one pass, where FlashInfer's rejection sampling may make several (a limitation named in
docs/LIMITATIONS.md).
"""
from __future__ import annotations

import torch

from ._hooks import after_import


def _ids(x: torch.Tensor) -> torch.Tensor:
    return x.argmax(dim=-1).to(torch.int32)


def top_k_top_p_sampling_from_logits(logits, top_k, top_p, *args, **kwargs):
    return _ids(logits)


def top_p_sampling_from_probs(probs, top_p, *args, **kwargs):
    return _ids(probs)


def top_k_sampling_from_probs(probs, top_k, *args, **kwargs):
    return _ids(probs)


def top_k_top_p_sampling_from_probs(probs, top_k, top_p, *args, **kwargs):
    return _ids(probs)


def sampling_from_probs(probs, *args, **kwargs):
    return _ids(probs)


def min_p_sampling_from_probs(probs, min_p, *args, **kwargs):
    return _ids(probs)


_STANDINS = {f.__name__: f for f in (top_k_top_p_sampling_from_logits, top_p_sampling_from_probs,
                                     top_k_sampling_from_probs, top_k_top_p_sampling_from_probs,
                                     sampling_from_probs, min_p_sampling_from_probs)}


def _patch(module) -> None:
    for name, f in _STANDINS.items():
        if hasattr(module, name):
            setattr(module, name, f)


def install() -> None:
    after_import("flashinfer.sampling", _patch)
