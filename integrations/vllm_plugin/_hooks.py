"""Run a function once a module is imported (now, if it already is), without importing it ourselves: the
plugin is loaded in every vLLM process, and most of them never import the modules it patches."""
from __future__ import annotations

import importlib.abc
import importlib.util
import logging
import sys
from typing import Callable

log = logging.getLogger("timewarp.vllm")


def _safe(fn: Callable, module) -> None:
    try:
        fn(module)
    except Exception:  # a vLLM version whose layout differs: say so, let vLLM run on unpatched
        log.exception("timewarp: could not patch %s", getattr(module, "__name__", module))


class _AfterImport(importlib.abc.MetaPathFinder):
    def __init__(self, name: str, fn: Callable):
        self.name, self.fn = name, fn

    def find_spec(self, name, path, target=None):
        if name != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _safe(self.fn, module)

        spec.loader.exec_module = exec_module
        return spec


def after_import(name: str, fn: Callable) -> None:
    if name in sys.modules:
        _safe(fn, sys.modules[name])
    else:
        sys.meta_path.insert(0, _AfterImport(name, fn))


_core = None


def _uncharged(fn: Callable, *args, **kwargs) -> None:
    """Run the emulator's own work with the virtual clock's charging paused: it is not the program's host
    time (shim_c/core/vclock.c, tw_charge_pause)."""
    global _core
    if _core is None:
        import ctypes
        _core = ctypes.CDLL(None)  # libtimewarp.so is preloaded: its symbols are global
    _core.tw_charge_pause()
    try:
        fn(*args, **kwargs)
    finally:
        _core.tw_charge_resume()


def wrap_method(module_name: str, cls_name: str, method: str, make: Callable, marker: str) -> None:
    """Once module_name is imported, replace cls_name.method by make(orig). `marker` names the attribute that
    says a method is already wrapped this way: idempotent (vLLM may load plugins several times), and two
    kinds of wrapper (the plugin's, the timeline's) each wrap once."""

    def patch(module) -> None:
        cls = getattr(module, cls_name)
        orig = getattr(cls, method)
        if getattr(orig, marker, False):
            return
        wrapper = make(orig)
        setattr(wrapper, marker, True)
        wrapper.__wrapped__ = orig
        setattr(cls, method, wrapper)

    after_import(module_name, patch)


def after_method(module_name: str, cls_name: str, method: str, after: Callable, what: str) -> None:
    """Once module_name is imported, make cls_name.method call after(self, result, *args, **kwargs) when it
    returns, uncharged (the emulator's bookkeeping, not the program's host work). after's exceptions are
    logged (`what` names it), never raised: the emulator's bookkeeping must not break the program."""

    def make(orig):
        def wrapper(self, *args, **kwargs):
            result = orig(self, *args, **kwargs)
            try:
                _uncharged(after, self, result, *args, **kwargs)
            except Exception:
                log.exception("timewarp: %s", what)
            return result
        return wrapper

    wrap_method(module_name, cls_name, method, make, "_timewarp")
