"""Tests drive the installed package through its public launcher, `timewarp run`, so that finding and
loading the shim libraries is tested with everything else. Each emulated program prints one JSON object
(its last line of stdout) that the test asserts on."""
from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import pytest

PROGS = pathlib.Path(__file__).parent / "progs"


class Run:
    def __init__(self, proc: subprocess.CompletedProcess, wall: float):
        self.proc, self.wall = proc, wall
        self.rc, self.stdout, self.stderr = proc.returncode, proc.stdout, proc.stderr

    @property
    def result(self) -> dict:
        lines = [l for l in self.stdout.splitlines() if l.startswith("{")]
        assert lines, f"no JSON result; rc={self.rc}\nstdout:\n{self.stdout[-3000:]}\nstderr:\n{self.stderr[-6000:]}"
        return json.loads(lines[-1])


def installed_programs() -> pathlib.Path:
    """The whole programs `timewarp validate` compares with the real GPU ship in the package
    (predictors/programs); the tests run the installed copies."""
    import timewarp.predictors
    return pathlib.Path(timewarp.predictors.__file__).parent / "programs"


def timewarp_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "timewarp", *args]


def run_emulated(code: str | None = None, *, prog: str | None = None, args=(), gpu="H200", gpus=1, env=None,
                 timeout=900, launcher_args=()) -> Run:
    """Run Python code (or tests/progs/<prog>) under `timewarp run`."""
    if code is not None:
        import tempfile
        fd, path = tempfile.mkstemp(suffix=".py", prefix="tw_prog_")
        with os.fdopen(fd, "w") as f:
            f.write(textwrap.dedent(code))
    else:
        path = str(PROGS / prog if (PROGS / prog).exists() else installed_programs() / prog)
    e = dict(os.environ)
    e.setdefault("TIMEWARP_STRICT", "0")
    e.update(env or {})
    cmd = timewarp_cmd("run", "--gpu", gpu, "--gpus", str(gpus), *launcher_args, "--", sys.executable, path, *args)
    t0 = time.monotonic()
    # its own process group, so that a timeout ends the emulated program and everything it started
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e,
                             start_new_session=True)
    try:
        out, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        raise
    p = subprocess.CompletedProcess(cmd, child.returncode, out, err)
    return Run(p, time.monotonic() - t0)


@pytest.fixture
def emulate():
    return run_emulated
