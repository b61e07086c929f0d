"""vLLM's engine in the calling process, for the calibration scripts that time one step at a time
(vllm_eager_profile.py, vllm_queue_slots.py). Import this before vllm: it sets the environment vLLM reads,
each a default the caller's environment may override (one process, no EngineCore child, so the caller's
profiler and patches see the whole engine; offline; no usage statistics), then imports vllm itself, so
that callers time the engine, not the import."""
import os
import random

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")

from vllm import LLM, SamplingParams  # noqa: E402  (after the environment: vLLM reads it)


def engine(model: str):
    """The engine on dummy weights, and sampling parameters for one token: each generate() call of fresh
    prompts is then one prefill step."""
    return LLM(model=model, load_format="dummy"), SamplingParams(max_tokens=1, ignore_eos=True)


def fresh_prompt(rng: random.Random, length: int) -> dict:
    """Token ids of the tokenizer's ordinary range, new at every call: no prefix-cache hits."""
    return {"prompt_token_ids": [rng.randrange(1000, 30000) for _ in range(length)]}
