"""Build and find the C++ shadow of small results (integrations/torch_shadow.cpp) for a given torch.

The library is compiled against the torch a program imports (torch.utils.cpp_extension, about 15-60 s on
2 cores), once per torch version, Python version and source, and kept in ~/.cache/timewarp/shadow_ext/
(TIMEWARP_SHADOW_EXT_DIR elsewhere). A build that fails (no compiler, no ninja) leaves build.failed there
with the reason: later processes go straight to the Python shadow instead of trying again; delete the
folder to retry.
`timewarp run` builds it before the program starts when its own Python has torch; a program whose torch
differs builds it at `import torch`, outside the emulation (a child without the shim) and uncharged.
Nothing here imports torch.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

SOURCE = Path(__file__).with_name("torch_shadow.cpp")
NAME = "timewarp_shadow"
_BUILD = ("import sys, torch.utils.cpp_extension as c; c.load(name=sys.argv[3], sources=[sys.argv[1]], "
          "build_directory=sys.argv[2], is_python_module=False, extra_cflags=['-O2'], verbose=False)")


def library_path(torch_version: str) -> Path:
    src = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]
    key = f"torch{torch_version}-py{sys.version_info[0]}{sys.version_info[1]}-{src}"
    base = os.environ.get("TIMEWARP_SHADOW_EXT_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "timewarp", "shadow_ext")
    return Path(base) / key / f"{NAME}.so"


def _clean_env() -> dict[str, str]:
    """The environment without timewarp: the compiler and the torch that drives it run natively."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TIMEWARP_") and k not in ("LD_PRELOAD", "LD_AUDIT", "TRITON_LIBCUDA_PATH")}
    site = str(Path(__file__).resolve().parent.parent / "_site")
    if "PYTHONPATH" in env:
        env["PYTHONPATH"] = os.pathsep.join(p for p in env["PYTHONPATH"].split(os.pathsep) if p and p != site)
    return env


def build(torch_version: str) -> Path | None:
    """The library's path, building it first if needed; None (and why, on stderr) if it cannot be built."""
    path = library_path(torch_version)
    if path.exists():
        return path
    failed = path.parent / "build.failed"
    if failed.exists():
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.write(f"timewarp: building the C++ shadow of small results for torch {torch_version} "
                     f"(once, under a minute)\n")
    try:
        r = subprocess.run([sys.executable, "-c", _BUILD, str(SOURCE), str(path.parent), NAME], env=_clean_env(),
                           capture_output=True, text=True, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as e:
        why = str(e)
    else:
        if r.returncode == 0 and path.exists():
            return path
        why = "\n".join((r.stderr or r.stdout).strip().splitlines()[-6:])
    sys.stderr.write(f"timewarp: cannot build the C++ shadow of small results, using the slower Python one "
                     f"(about 10 us more host time per PyTorch operation; delete {path.parent} to retry):\n{why}\n")
    try:
        failed.write_text(why + "\n")
    except OSError:
        pass
    return None


def prebuild() -> None:
    """For `timewarp run`: build for the torch of this Python, if it has one (the usual case: the program
    runs in the same environment), so that no emulated process waits for the compiler; nothing when the
    shadow or its C++ form is turned off (TIMEWARP_SHADOW=0, TIMEWARP_SHADOW_NATIVE=0)."""
    if os.environ.get("TIMEWARP_SHADOW", "1") == "0" or os.environ.get("TIMEWARP_SHADOW_NATIVE", "1") == "0":
        return
    try:
        from importlib.metadata import PackageNotFoundError, version
        v = version("torch")
    except PackageNotFoundError:
        return
    if not library_path(v).exists():
        build(v)  # a failure is remembered: the program's processes do not try again
