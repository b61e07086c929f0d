"""Benchmark: the shim's CPU cost per intercepted kernel launch and launches per second.

    python -m timewarp.integrations.benchmarks.launch_cost [N]

Compiles launch_cost.c with gcc against the installed fake libcudart and runs it under `timewarp run`."""
from __future__ import annotations

import importlib.resources
import os
import subprocess
import sys
import tempfile


def main() -> None:
    n = sys.argv[1] if len(sys.argv) > 1 else "1000000"
    lib = importlib.resources.files("timewarp") / "_lib"
    src = importlib.resources.files("timewarp.integrations.benchmarks") / "launch_cost.c"
    with tempfile.TemporaryDirectory() as d:
        exe = os.path.join(d, "launch_cost")
        subprocess.run(["gcc", "-O2", "-o", exe, str(src), f"-L{lib}", "-l:libcudart.so.13", f"-Wl,-rpath,{lib}"],
                       check=True)
        subprocess.run([sys.executable, "-m", "timewarp", "run", "--", exe, n], check=True)


if __name__ == "__main__":
    main()
