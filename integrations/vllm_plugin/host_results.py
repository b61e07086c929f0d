"""The results vLLM's host reads back from the GPU every step, as the real run would produce them.

vLLM's V2 model runner (the default when Triton is active; vLLM 0.24 runs Llama models on it) samples on the
GPU and copies two small tensors to the host each step: the sampled token ids and the number of tokens each
request sampled. The V1 runner (Qwen2 and other models) copies only the ids (`_after_v1_sample`). Kernels never
run under emulation, so the copies would carry whatever the memory held: token ids that the detokenizer
rejects, and 1 sample for a request whose prompt is still being prefilled in chunks (a Triton kernel would
have set 0). After vLLM's own sampling has launched its kernels (so they are timed), this writes the values
into those tensors' host-backed device memory, before the copies to the host are issued:
- number sampled: 1 per request, 0 while a chunked prefill has not reached the end of its prompt (the rule
  of vLLM's `_get_num_sampled_and_rejected_kernel`);
- token ids: a deterministic function of the request and its position, never an end-of-sequence id, drawn
  as the real model would sample them:
  - dummy weights (`--load-format dummy`): uniformly over the model's whole vocabulary, as the real H200
    samples from a randomly initialised model's near-flat logits. The embedded model has 128,256 logits and
    a 32,000-id tokenizer, so 3 ids in 4 decode to no text: the real runs' completions have 1.21-1.30
    characters per token (predictors/data/h200/vllm_2026-11-30m), a uniform draw 1.23. That matters for the
    host's time, not only for the text: while a request's tokens have given no text yet, every step
    re-decodes its whole prompt (tokenizers' DecodeStream primed with it: 0.25-0.5 ms a step for 1024
    tokens here), and on the real host the API server's output processing for the first ~10 steps of a
    wave of 16 requests of 1024 tokens took 14, 12, 6, 4.5 ... ms instead of 0.3;
  - real weights: the tokenizer's ordinary ids (never a special or byte token), as text.
  A request therefore ends at its max_tokens or a stop condition, never at EOS: with `--ignore-eos` that is
  exactly what the real run does; without it, the real run ends where the model happens to pick EOS, which
  cannot be predicted (docs/VLLM.md).
Speculative decoding (rejection sampling) is not modelled: its accepted-draft counts are left as sampled.
"""
from __future__ import annotations

import logging
import zlib

import numpy as np
import torch

log = logging.getLogger("timewarp.vllm")

_warned: set[str] = set()


def _warn_once(key: str, msg: str, *args) -> None:
    if key not in _warned:
        _warned.add(key)
        log.warning("timewarp: " + msg, *args)


def _shadow():
    from timewarp.integrations import torch_shadow
    return torch_shadow


class TokenSource:
    """Token ids for (request, position), a fixed function of both: with dummy weights any id of the model's
    vocabulary but EOS, else ordinary ids of the tokenizer."""

    def __init__(self, model_config, dummy_weights: bool = False):
        self.lo, self.hi, self.avoid = self._range(model_config, dummy_weights)
        self._req_hash: dict[str, int] = {}

    @staticmethod
    def _range(model_config, dummy_weights: bool) -> tuple[int, int, np.ndarray]:
        hi = int(getattr(model_config.hf_text_config, "vocab_size", 0) or model_config.get_vocab_size())
        eos = getattr(model_config.hf_config, "eos_token_id", None)
        eos_ids = [eos] if isinstance(eos, int) else list(eos or [])
        if dummy_weights:
            return 0, hi, np.array(sorted(set(eos_ids)), dtype=np.int64)
        specials: set[int] = set()
        try:
            from transformers import AutoTokenizer
            tok = AutoTokenizer.from_pretrained(model_config.tokenizer, trust_remote_code=model_config.trust_remote_code,
                                                revision=model_config.tokenizer_revision)
            hi = min(hi, len(tok))
            specials.update(int(i) for i in tok.all_special_ids)
        except Exception as e:  # no tokenizer (skip_tokenizer_init): the model's vocabulary, minus its EOS
            _warn_once("tok", "no tokenizer for sampled ids (%s); using ids below the model's vocabulary", e)
        specials.update(eos_ids)
        # Byte-fallback and control tokens sit at the bottom of most vocabularies: start above them.
        lo = 259 if hi > 4096 else 1
        return lo, hi, np.array(sorted(specials), dtype=np.int64)

    def ids(self, req_ids: list[str], positions: np.ndarray) -> np.ndarray:
        h = np.array([self._hash(r) for r in req_ids], dtype=np.uint64)
        x = (h * np.uint64(0x9E3779B97F4A7C15) + positions.astype(np.uint64) * np.uint64(0xBF58476D1CE4E5B9))
        x ^= x >> np.uint64(29)
        out = (self.lo + (x % np.uint64(self.hi - self.lo))).astype(np.int64)
        if self.avoid.size:
            out = np.where(np.isin(out, self.avoid), self.lo + (out - self.lo + 1) % (self.hi - self.lo), out)
        return out

    def _hash(self, req_id: str) -> int:
        h = self._req_hash.get(req_id)
        if h is None:
            if len(self._req_hash) > 65536:
                self._req_hash.clear()  # bounded: a long serving run sees unboundedly many requests
            h = self._req_hash[req_id] = zlib.crc32(req_id.encode())
        return h


def num_sampled(input_batch) -> np.ndarray:
    """1 per request, 0 for a chunked prefill that has not reached the end of its prompt."""
    n = input_batch.num_reqs
    seq_len = input_batch.num_computed_tokens_np[:n] + input_batch.num_scheduled_tokens[:n]
    return (seq_len >= input_batch.prefill_len_np[:n]).astype(np.int64)


def _write(t: torch.Tensor, values: np.ndarray, what: str) -> bool:
    sh = _shadow()
    if t.device.type != "cuda" or not sh._backed(t):
        _warn_once(what, "%s (%s, %d bytes) is not in host-backed memory; the host reads stale values",
                   what, t.dtype, t.numel() * t.element_size())
        return False
    host = sh._alias(t)
    flat = host.reshape(-1) if host.is_contiguous() else host
    k = min(flat.shape[0], values.shape[0])
    flat[:k] = torch.from_numpy(values[:k]).to(flat.dtype)
    sh._note_write()  # the C++ shadow's zero-fills there no longer hold
    return True


def _source(runner) -> TokenSource:
    src = getattr(runner, "_timewarp_tokens", None)
    if src is None:
        dummy = str(getattr(getattr(runner, "load_config", None), "load_format", "")) == "dummy"
        src = runner._timewarp_tokens = TokenSource(runner.model_config, dummy)
    return src


def fill(runner, input_batch, sampler_output, num_sampled_t: torch.Tensor) -> None:
    if input_batch.num_draft_tokens:
        _warn_once("spec", "speculative decoding: accepted-draft counts are not modelled")
    # uncharged: after_method pauses the virtual clock's charging around this
    src = _source(runner)
    n = input_batch.num_reqs
    ns = num_sampled(input_batch)
    positions = input_batch.num_computed_tokens_np[:n] + input_batch.num_scheduled_tokens[:n]
    ids = src.ids(input_batch.req_ids[:n], positions)
    _write(sampler_output.sampled_token_ids, ids, "sampled token ids")
    _write(num_sampled_t, ns.astype(np.int64), "number of sampled tokens")


def _after_sample(runner, out, hidden_states, input_batch, grammar_output) -> None:
    sampler_output, n_sampled, _ = out
    fill(runner, input_batch, sampler_output, n_sampled)


def _after_v1_sample(runner, sampler_output, logits, spec_decode_metadata, *args, **kwargs) -> None:
    """The V1 runner (vLLM 0.24's runner for Qwen2 and other non-Llama models) samples one token per request
    and leaves the discarding of a chunked prefill's token to the host: only the ids are supplied, each
    request's position being its tokens computed before this step."""
    if spec_decode_metadata is not None:
        _warn_once("spec", "speculative decoding: accepted-draft counts are not modelled")
        return
    batch = runner.input_batch
    n = batch.num_reqs
    ids = _source(runner).ids(batch.req_ids[:n], batch.num_computed_tokens_cpu[:n])
    _write(sampler_output.sampled_token_ids, ids, "sampled token ids")


def install() -> None:
    from ._hooks import after_method
    after_method("vllm.v1.worker.gpu.model_runner", "GPUModelRunner", "sample", _after_sample,
                 "sampled results not supplied")
    after_method("vllm.v1.worker.gpu_model_runner", "GPUModelRunner", "_sample", _after_v1_sample,
                 "sampled results not supplied (V1 runner)")
