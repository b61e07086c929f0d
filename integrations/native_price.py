"""A tokenizer's native code is charged by the native pace, not by the Python pace.

Why: emulated programs are charged their CPU time, scaled by the host pace, which a Python probe measures
(coordinator/pace.py). This machine's neighbours slow Python 2-3.6x more than they slow a tokenizer's Rust
(predictors/data/h200/native_probe_2026-12-02: beside an emulated vLLM run the Python probe took 2.1x its idle
time, the tokenizer 1.0-1.3x). Priced by the Python probe, vLLM's tokenization came out 30-50% cheaper than on
the real host (docs/VLLM.md, eighteenth session), and with it each request reached the engine early.

How: the methods of HF transformers' fast tokenizers that run the Rust tokenizer (encoding and decoding) mark
their thread's CPU time as native while they run (tw_clock_native, shim_c/core/vclock.c); the shim charges it
by the native probe's pace of the CPU it runs on. The same calls let Python's GIL go around their Rust part
(tokenizers' encode_batch), and the GIL model (shim_c/core/gil.c) counts native CPU time as time the GIL is
free. The Python around the call (argument handling, building the result) is marked too: it is small beside
the Rust part (150-200 us of 2.9 ms for 1,024 tokens here).
vLLM's incremental detokenizer primes a `tokenizers` DecodeStream with the whole prompt; its first step decodes
all of it (a 1,024-token prompt: 1.6-2.0 ms on the H200 host, leases s and t, against 0.09 ms for a later output),
so each request's first `decode_next` is marked. Its later steps are not: the output processing they are part of
slows on this machine as Python does, not as a tokenization does. Against two H200 hosts
(leases y and z, twenty-sixth session) the API server's output processing per engine step (`api.outputs`)
took 2.0-2.2x z's CPU here, as the EngineCore's Python phases did (2.0-2.2x), while a tokenization took 1.3x
(the native probe's kind of work). With every step marked (twenty-fourth session; TIMEWARP_DETOK_NATIVE_ALL=1
brings it back) `api.outputs` came out above both hosts in cases 2-6 (+8 to +44% against the slower, y); with
the first step only, between them (-17 to +5% against y, +8 to +33% against z), as the EngineCore's phases are.
The marking costs two ctypes calls (about 1 us) per marked call.
Not covered: tokenizers called directly (`tokenizers.Tokenizer`) stay on the Python pace; their methods
belong to a Rust type.
"""
from __future__ import annotations

import ctypes
import functools
import importlib
import os
import sys
import threading

from .thread_clock import core as _lib


_cold_call = threading.local()   # inside a cold call on this thread


def _cold_ns() -> int:
    """This machine's cost of a cold tokenizer call (TIMEWARP_NATIVE_COLD_US, which `timewarp run` measures:
    integrations/launcher.py's native_cold_env), in ns; 0 where it is not set."""
    try:
        return max(0, int(float(os.environ.get("TIMEWARP_NATIVE_COLD_US", "0")) * 1000))
    except ValueError:
        return 0


def native(fn, cold: bool = False):
    """fn, with its thread's CPU time charged as native code while it runs. cold: fn is a tokenization, which
    in vLLM's API server starts with caches the run's other processes took; the CPU of that refill on this
    machine (up to _cold_ns, never more than the call's own CPU) is not charged, because the native pace's
    target holds the real host's own (coordinator/pace.py, cold_call_us)."""
    forgive = ctypes.c_uint64(_cold_ns() if cold else 0)

    @functools.wraps(fn)
    def charged_native(*args, **kwargs):
        core = _lib()
        was = core.tw_clock_native(1)
        # once per tokenization: transformers 4's _encode_plus calls the (also marked) _batch_encode_plus
        outer = bool(forgive.value) and not getattr(_cold_call, "on", False)
        if outer:
            _cold_call.on = True
            core.tw_charge_forgive(forgive)
        try:
            return fn(*args, **kwargs)
        finally:
            core.tw_clock_native(was)   # charges the call's CPU, less what is forgiven
            if outer:
                core.tw_charge_forgive_clear()   # what the call did not use is not carried to later work
                _cold_call.on = False
    charged_native._timewarp_native = True
    return charged_native


# (module, class, methods): transformers 5's TokenizersBackend and 4's PreTrainedTokenizerFast, and vLLM's
# detokenizer, run the Rust tokenizer in each call.
_TARGETS = (
    ("transformers.tokenization_utils_tokenizers", "TokenizersBackend", ("_encode_plus", "_batch_encode_plus", "_decode")),
    ("transformers.tokenization_utils_fast", "PreTrainedTokenizerFast", ("_encode_plus", "_batch_encode_plus", "_decode")),
    ("vllm.v1.engine.detokenizer", "FastIncrementalDetokenizer", ("decode_next",)),
)
_COLD = ("_encode_plus", "_batch_encode_plus")   # a prompt's tokenization (cold; native's docstring)
_ONLY_IF_IMPORTED = ("vllm",)   # packages heavy to import: marked only in programs that run them already


def native_first(fn):
    """fn, charged as native code in its first call on each object only (later calls at the Python pace)."""
    marked = native(fn)

    @functools.wraps(fn)
    def charged_native_first(self, *args, **kwargs):
        if getattr(self, "_timewarp_first_done", False):
            return fn(self, *args, **kwargs)
        self._timewarp_first_done = True
        return marked(self, *args, **kwargs)
    charged_native_first._timewarp_native = True
    return charged_native_first


def install() -> list[str]:
    """Mark the tokenizer methods found (idempotent); returns them as "Class.method". Nothing outside
    emulation (no shim to charge)."""
    try:
        if not hasattr(_lib(), "tw_clock_native"):
            return []
    except OSError:
        return []
    done, seen = [], set()
    for module, cls_name, methods in _TARGETS:
        package = module.partition(".")[0]
        if package in _ONLY_IF_IMPORTED and package not in sys.modules:
            continue
        try:
            cls = getattr(importlib.import_module(module), cls_name)
        except (ImportError, AttributeError):
            continue
        if cls in seen:   # transformers 5 keeps PreTrainedTokenizerFast as a name of TokenizersBackend
            continue
        seen.add(cls)
        for name in methods:
            f = cls.__dict__.get(name)
            if f is None:
                continue
            if not getattr(f, "_timewarp_native", False):
                first_only = name == "decode_next" and os.environ.get("TIMEWARP_DETOK_NATIVE_ALL", "0") != "1"
                setattr(cls, name, native_first(f) if first_only else native(f, cold=name in _COLD))
            done.append(f"{cls_name}.{name}")
    return done
