"""Run at start-up by every Python process that timewarp launches (the launcher puts this folder first on
PYTHONPATH). It installs timewarp's shadow of small PyTorch results (integrations/torch_shadow.py) the
moment the program imports torch, and then runs the sitecustomize this one hides, if there is one.
Nothing here imports torch itself: processes that never use it pay nothing."""
import importlib.abc
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_SHADOW = os.path.join(os.path.dirname(_HERE), "integrations", "torch_shadow.py")


def _install_shadow():
    try:
        spec = importlib.util.spec_from_file_location("timewarp_torch_shadow", _SHADOW)
        mod = importlib.util.module_from_spec(spec)
        sys.modules["timewarp_torch_shadow"] = mod
        spec.loader.exec_module(mod)
        mod.install()
    except Exception as e:  # the program runs on without host-visible small results
        sys.stderr.write(f"timewarp: shadow of small PyTorch results not installed: {type(e).__name__}: {e}\n")


class _TorchImportHook(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec("torch")
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _install_shadow()

        spec.loader.exec_module = exec_module
        return spec


if os.environ.get("TIMEWARP_SHADOW", "1") != "0" and os.path.exists(_SHADOW):
    sys.meta_path.insert(0, _TorchImportHook())


def _chain():
    for p in sys.path:
        if not p or os.path.abspath(p) == _HERE:
            continue
        f = os.path.join(p, "sitecustomize.py")
        if os.path.isfile(f):
            with open(f) as fh:
                code = compile(fh.read(), f, "exec")
            exec(code, {"__name__": "sitecustomize", "__file__": f})
            return


_chain()
