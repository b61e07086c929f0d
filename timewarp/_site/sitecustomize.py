"""Run at start-up by every Python process that timewarp launches (the launcher puts this folder first on
PYTHONPATH). It installs timewarp's shadow of small PyTorch results (integrations/torch_shadow.py) the
moment the program imports torch, and on Python < 3.12 aiohttp's eager request writes
(integrations/aiohttp_eager.py) the moment it imports aiohttp's client, makes os.cpu_count() report the target
host's CPUs, and then runs the sitecustomize this one hides, if there is one. Nothing here imports torch or
aiohttp itself: processes that never use them pay nothing."""
import importlib.abc
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_INTEGRATIONS = os.path.join(os.path.dirname(_HERE), "integrations")


def _installer(file, what):
    """A function that loads integrations/<file> and calls its install() (the hooked module just imported)."""
    path = os.path.join(_INTEGRATIONS, file)

    def install():
        try:
            spec = importlib.util.spec_from_file_location("timewarp_" + file[:-3], path)
            mod = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = mod
            spec.loader.exec_module(mod)
            mod.install()
        except Exception as e:  # the program runs on without it
            sys.stderr.write(f"timewarp: {what} not installed: {type(e).__name__}: {e}\n")
    return install


# module name -> what to install right after it is imported (each switch off with its variable at "0")
_HOOKS = {}
if os.environ.get("TIMEWARP_SHADOW", "1") != "0":
    _HOOKS["torch"] = _installer("torch_shadow.py", "shadow of small PyTorch results")
if sys.version_info < (3, 12) and os.environ.get("TIMEWARP_AIOHTTP_EAGER", "1") != "0":
    _HOOKS["aiohttp.client_reqrep"] = _installer("aiohttp_eager.py", "aiohttp's eager request writes")


# the target host's CPU count (integrations/launcher.py, host_cpus): what programs size their thread pools by;
# os.sched_getaffinity stays this machine's (it names the CPUs a thread may run on)
try:
    _cpus = int(os.environ.get("TIMEWARP_HOST_CPUS", ""))
except ValueError:
    _cpus = 0
if _cpus > 0:
    os.cpu_count = lambda: _cpus
    if hasattr(os, "process_cpu_count"):   # Python 3.13: what the pools use there
        os.process_cpu_count = lambda: _cpus


class _ImportHook(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        hook = _HOOKS.pop(name, None)
        if hook is None:
            return None
        if not _HOOKS:
            sys.meta_path.remove(self)
        # find the real spec without this finder (it has just dropped name, so it will not recurse)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            hook()

        spec.loader.exec_module = exec_module
        return spec


if _HOOKS:
    sys.meta_path.insert(0, _ImportHook())


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
