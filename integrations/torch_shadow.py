"""Host-visible results of small PyTorch operations.

Kernels never run under emulation, so a value that a program computes on the GPU and reads back (a stopping
test in transformers' generate(), a length, a mask sum) would be whatever the memory held before. Small
device allocations are host-backed (shim_c/core/memory.c), so their bytes can be read and written from the
host. This TorchDispatchMode lets every operation run as usual (launching its kernels, which are timed),
then, for an operation whose outputs are small and backed:
- if every device input is small and backed too, computes the same operation on the CPU over aliases of
  the device memory and writes the result into the outputs: the values read back are exact;
- otherwise (an input lives in large, address-only memory: weights, activations, logits) fills the outputs
  with zeros, so what is read back is deterministic rather than stale.
Results of the second kind are unknown: the real values depend on data the emulator never has. The mode
remembers which storages hold unknown bytes, and an operation with an unknown input gives an unknown
result. Integer and boolean ones up to UNKNOWN_COMPUTE_BYTES (token ids, flags, counts: generate() appends
each step's token to the known prompt and negates and combines stopping flags, and must see what the same
code computes on them) are computed on the bytes at hand; floating-point ones (activations, norms, scores,
derived from zeroed GEMM outputs) are zero-filled. Computing those on the CPU cost about ten times a
decode step's own host work, and what of it the pausing could not exclude (caches, the other vCPU) made a
4-layer batch-1 decode step 2-3x slower on the virtual clock.
Views, random number generators and cross-device copies are left alone (copies move real bytes through the
shim already). The CPU work is not charged to the virtual clock (tw_charge_pause/resume). Under
torch.compile'd code and CUDA graph replays no aten operation is dispatched, so nothing is shadowed there.

Installed at `import torch` by timewarp's sitecustomize when TIMEWARP_SHADOW is not "0".
"""
from __future__ import annotations

import ctypes
import logging
import os

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map

log = logging.getLogger(__name__)

MAX_BYTES = int(os.environ.get("TIMEWARP_SHADOW_MAX_BYTES", str(1 << 20)))
UNKNOWN_COMPUTE_BYTES = int(os.environ.get("TIMEWARP_SHADOW_UNKNOWN_BYTES", str(64 << 10)))


class _Alloc(ctypes.Structure):  # tw_alloc in shim_c/include/tw/core.h
    _fields_ = [("base", ctypes.c_size_t), ("size", ctypes.c_size_t), ("device", ctypes.c_int),
                ("kind", ctypes.c_int), ("backed", ctypes.c_int), ("vmm", ctypes.c_int)]


_core = ctypes.CDLL(None)  # libtimewarp.so is preloaded: its symbols are global
_lookup = _core.tw_mem_lookup
_lookup.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Alloc)]
_lookup.restype = ctypes.c_int
_pause, _resume = _core.tw_charge_pause, _core.tw_charge_resume
_forgive = _core.tw_charge_forgive
_forgive.argtypes = [ctypes.c_uint64]
_note_write = _core.tw_mem_note_device_write  # a write into device memory that bypasses the shim

_aten = torch.ops.aten
_LEAVE = {
    _aten._local_scalar_dense.default, _aten.empty.memory_format, _aten.empty_strided.default,
    _aten.empty_like.default, _aten.set_.source_Storage_storage_offset, _aten.record_stream.default,
    _aten.resize_.default,
}
_FRESH = {_aten.empty.memory_format, _aten.empty_strided.default, _aten.empty_like.default}
_RANDOM_WORDS = ("rand", "normal", "bernoulli", "multinomial", "dropout", "uniform", "exponential", "geometric",
                 "cauchy", "log_normal", "random_", "poisson")


def _backed(t: torch.Tensor) -> bool:
    """t's whole storage is small, host-backed device memory."""
    st = t.untyped_storage()
    n = st.nbytes()
    if n == 0:
        return True
    if n > MAX_BYTES:
        return False
    a = _Alloc()
    ptr = st.data_ptr()
    return bool(_lookup(ptr, ctypes.byref(a))) and a.backed == 1 and ptr + n <= a.base + a.size


def _alias(t: torch.Tensor) -> torch.Tensor:
    """A CPU tensor over the same bytes as the device tensor t."""
    st = t.untyped_storage()
    n = st.nbytes()
    if n == 0:
        return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype)
    raw = torch.frombuffer((ctypes.c_char * n).from_address(st.data_ptr()), dtype=torch.uint8)
    return raw.view(t.dtype).as_strided(t.shape, t.stride(), t.storage_offset())


def _tensors(x):
    """The tensors in an operation's arguments or results (tuples, lists, dicts of them): what tree_flatten
    finds there, at a fraction of its cost."""
    if isinstance(x, torch.Tensor):
        yield x
    elif isinstance(x, (tuple, list)):
        for y in x:
            yield from _tensors(y)
    elif isinstance(x, dict):
        for y in x.values():
            yield from _tensors(y)


def _is_dev(x) -> bool:
    return isinstance(x, torch.Tensor) and x.device.type == "cuda"


def _plain(x) -> bool:
    return type(x) in (torch.Tensor, torch.nn.Parameter)


class ShadowMode(TorchDispatchMode):
    @classmethod
    def ignore_compile_internals(cls) -> bool:
        # Without this, torch.compile sees a user dispatch mode on the stack and silently runs the function
        # eagerly ("non-infra torch dispatch mode present"): compiled programs would be timed as eager ones.
        # With it the mode is off while Dynamo and Inductor compile and back on around the compiled code.
        return True

    def __init__(self):
        super().__init__()
        self._kinds: dict = {}  # func -> (skipped, in-place), read once from its schema
        self.shadowed = self.zeroed = self.failed = 0
        self._unknown: set[int] = set()  # data_ptr of storages whose bytes are not what the real run has
        self.entry_ns = 0

    def _kind(self, func) -> tuple[bool, bool]:
        """(skipped: a view, random, allocation-only, or no tensor result; in-place: writes an argument)"""
        k = self._kinds.get(func)
        if k is None:
            name = func.name()
            returns = func._schema.returns
            view = any(r.alias_info is not None and not r.alias_info.is_write for r in returns)
            skipped = (func in _LEAVE or view or any(w in name for w in _RANDOM_WORDS)
                       or not any(isinstance(r.type, torch.TensorType) or "Tensor" in str(r.type) for r in returns))
            inplace = any(r.alias_info is not None and r.alias_info.is_write for r in returns)
            k = self._kinds[func] = (skipped, inplace)
        return k

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        # Only the real operation's own host work is charged to the virtual clock, as in the real run: the
        # mode's Python work around it is paused, and what pausing cannot exclude (the dispatcher's calls
        # into and out of Python, the Python call of the operation) is forgiven by the amount calibrate()
        # measured per operation.
        if self.entry_ns:
            _forgive(self.entry_ns)
        _pause()
        try:
            kwargs = kwargs or {}
            _resume()
            try:
                out = func(*args, **kwargs)
            finally:
                _pause()
            if func in _FRESH and type(out) is torch.Tensor:  # a new allocation, whatever the block held
                self._unknown.discard(out.untyped_storage().data_ptr())
            elif not self._kind(func)[0]:
                try:
                    self._shadow(func, args, kwargs, out)
                except Exception as e:  # never let the emulator's bookkeeping break the program
                    self.failed += 1
                    log.debug("shadow of %s failed: %s", func, e)
            return out
        finally:
            _resume()

    def _shadow(self, func, args, kwargs, out) -> None:
        if type(out) is torch.Tensor and out.numel() * out.element_size() > MAX_BYTES:
            return  # the common large case, decided without flattening
        outs = list(_tensors(out))
        targets = [t for t in outs if _is_dev(t)]
        if not targets or not all(_plain(t) and _backed(t) for t in targets):
            return
        if torch.cuda.is_current_stream_capturing():
            return  # a captured operation runs at replay, which dispatches nothing
        ins = list(_tensors(args))
        if kwargs:
            ins += _tensors(kwargs)
        unknown = self._unknown
        if ((func is _aten.copy_.default and ins[0].device != ins[1].device)
                or (func is _aten._to_copy.default and any(not _is_dev(x) for x in ins))):
            for t in targets:  # from the host: the shim moved real bytes
                if t.numel() * t.element_size() == t.untyped_storage().nbytes():
                    unknown.discard(t.untyped_storage().data_ptr())
            return
        dev_ins = [x for x in ins if _is_dev(x)]
        inplace = self._kind(func)[1]
        derived = any(x.untyped_storage().data_ptr() in unknown for x in dev_ins)
        small = (all(not t.dtype.is_floating_point and not t.dtype.is_complex for t in targets)
                 and sum(t.untyped_storage().nbytes() for t in targets) <= UNKNOWN_COMPUTE_BYTES)
        # the inputs' own lookups are skipped when the result is unknown and large anyway
        backed = (derived and not small) or all(_plain(x) and _backed(x) for x in dev_ins)
        derived = derived or not backed
        for t in targets:  # an in-place write of known values into part of an unknown storage leaves it unknown
            if derived:
                unknown.add(t.untyped_storage().data_ptr())
            elif not inplace:
                unknown.discard(t.untyped_storage().data_ptr())
        if backed and (not derived or small):
            def to_host(x):
                if _is_dev(x):
                    return _alias(x)
                if isinstance(x, torch.device) and x.type == "cuda":
                    return torch.device("cpu")
                return x
            cargs, ckwargs = tree_map(to_host, (args, kwargs))
            if ckwargs.get("device") is not None and str(ckwargs["device"]).startswith("cuda"):
                ckwargs["device"] = torch.device("cpu")
            res = func(*cargs, **ckwargs)
            if not inplace:  # in-place and out= variants wrote through the aliases already
                for t, r in zip(outs, _tensors(res)):
                    if _is_dev(t):
                        _alias(t).copy_(r)
            self.shadowed += 1
        elif not inplace:  # fresh outputs: their whole storage
            for t in targets:
                st = t.untyped_storage()
                ctypes.memset(st.data_ptr(), 0, st.nbytes())
            self.zeroed += 1


_mode: ShadowMode | None = None


def calibrate(mode: ShadowMode, n: int = 200, rounds: int = 7) -> int:
    """The virtual time the mode still charges per operation after pausing (the dispatcher's calls into and
    out of Python, the Python call of the operation), in ns: the difference of operations' charged time with
    and without the mode, on the virtual clock itself (perf_counter), median over rounds.

    Measured in every process when the mode is installed, on CPU tensors (no kernel reaches the device or
    its trace): the amount moves with this machine's speed, which changes by up to 2x within the hour, and
    a stale value forgave more than the mode costs, removing the operations' own host work from the clock
    (a 512x4096 add was charged the launch cost alone). Costs 20-40 ms of host time at `import torch`."""
    import time

    x = torch.ones(1)
    def run():
        t0 = time.perf_counter()
        for _ in range(n):
            y = torch.add(x, x)
            y = torch.nn.functional.silu(y)
            y.sum(-1)
        return time.perf_counter() - t0
    diffs = []
    run()  # warm
    for _ in range(rounds):
        base = run()
        with mode:
            with_mode = run()
        diffs.append((with_mode - base) / (3 * n))
    diffs.sort()
    return max(0, int(diffs[len(diffs) // 2] * 1e9))


def _forgiveness(mode: ShadowMode) -> int:
    """TIMEWARP_SHADOW_FORGIVE_NS if set, else calibrate() now."""
    if os.environ.get("TIMEWARP_SHADOW_FORGIVE_NS"):
        return int(os.environ["TIMEWARP_SHADOW_FORGIVE_NS"])
    return calibrate(mode)


_native = False


def _native_library() -> str | None:
    """The C++ shadow for this torch (integrations/shadow_ext.py), built now if `timewarp run` could not."""
    import importlib.util
    from importlib.metadata import version

    spec = importlib.util.spec_from_file_location("timewarp_shadow_ext",
                                                  os.path.join(os.path.dirname(__file__), "shadow_ext.py"))
    ext = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ext)
    path = ext.build(version("torch"))
    return str(path) if path else None


def uninstall() -> bool:
    """Turn the shadow off, from the thread that installed it (a program that supplies its own host-visible
    results: integrations/vllm_plugin). Returns whether it was installed."""
    global _mode, _native
    if _native:
        torch.ops.timewarp_shadow.enable(False)
        _native = False
        return True
    if _mode is None:
        return False
    _mode.__exit__(None, None, None)
    _mode = None
    return True


def install() -> ShadowMode | None:
    """Turn the shadow on for the calling thread (the thread that imported torch: the program's main
    thread): the C++ one (integrations/torch_shadow.cpp) unless TIMEWARP_SHADOW_NATIVE=0 or it cannot be
    built, else the Python mode (returned)."""
    global _mode, _native
    if _native or _mode is not None:
        return _mode
    if os.environ.get("TIMEWARP_SHADOW_NATIVE", "1") != "0":
        _pause()  # building or loading it is the emulator's work, not the program's
        try:
            lib = _native_library()
            if lib:
                torch.ops.load_library(lib)
                torch.ops.timewarp_shadow.configure(MAX_BYTES, UNKNOWN_COMPUTE_BYTES)
                _native = bool(torch.ops.timewarp_shadow.enable(True))
        except Exception as e:  # noqa: BLE001
            log.warning("timewarp: C++ shadow not loaded (%s); using the Python one", e)
        finally:
            _resume()
        if _native:
            return None
    _mode = ShadowMode()
    _mode.entry_ns = _forgiveness(_mode)
    _mode.__enter__()
    return _mode


def stats() -> dict:
    """What the shadow did so far in this process: operations computed and zero-filled, failures."""
    if _native:
        c, z, f, u, k = torch.ops.timewarp_shadow.stats()
        return {"impl": "c++", "computed": c, "zeroed": z, "failed": f, "unknown_storages": u, "zeros_kept": k}
    if _mode is not None:
        return {"impl": "python", "computed": _mode.shadowed, "zeroed": _mode.zeroed, "failed": _mode.failed,
                "unknown_storages": len(_mode._unknown)}
    return {"impl": None}
