"""The run's shared clock file and the time keeper's loop, driven from Python.

The keeper is C (shim_c/keeper/keeper.c, libtimewarp_keeper.so) because it works on the same shared
memory as every emulated thread; this module creates the file, runs the keeper on a thread (ctypes releases
the GIL), and reads its state.
"""
from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import tempfile
import threading
import uuid
from pathlib import Path

KEEPER_LIB = "libtimewarp_keeper.so"


class ClockError(RuntimeError):
    """The shared clock could not be created."""


def _shm_dir() -> Path:
    d = Path("/dev/shm")
    return d if d.is_dir() and os.access(d, os.W_OK) else Path(tempfile.gettempdir())


class SharedClock:
    """Creates the clock file, runs the keeper until close()."""

    def __init__(self, lib_dir: Path, topology: str = "", host_speed: float = 1.0,
                 pace_target_us: float | None = None, native_target_us: float | None = None,
                 blend_us: float = 0.0):
        """host_speed: a fixed factor on every CPU second charged; pace_target_us: measure it instead, per CPU
        and moment, against this target (pace.py), falling back to host_speed until the first measurement;
        native_target_us: the native probe's target (pace.py; None: native code is charged the same pace);
        blend_us: blend the Python pace with the native probe's (pace.py's BLEND_US; 0: not)."""
        self.run_id = uuid.uuid4().hex[:12]
        self.path = str(_shm_dir() / f"timewarp-{os.getpid()}-{self.run_id}.clock")
        lib_path = Path(lib_dir) / KEEPER_LIB
        try:
            self._lib = ctypes.CDLL(str(lib_path))
        except OSError as e:
            raise ClockError(f"cannot load the time keeper {lib_path}: {e}") from None
        L = self._lib
        L.tw_keeper_create.restype = ctypes.c_void_p
        L.tw_keeper_create.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        L.tw_keeper_close.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        L.tw_keeper_abort.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        L.tw_keeper_run.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int), ctypes.c_double]
        L.tw_keeper_status.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
        L.tw_keeper_status.restype = ctypes.c_int
        L.tw_keeper_pace_layout.argtypes = [ctypes.POINTER(ctypes.c_long)] * 3 + [ctypes.POINTER(ctypes.c_int)]
        L.tw_keeper_native_layout.argtypes = [ctypes.POINTER(ctypes.c_long)] * 3
        self._k = L.tw_keeper_create(self.path.encode(), topology.encode())
        if not self._k:
            err = ctypes.get_errno()
            raise ClockError(f"cannot create the run's clock file {self.path}: {os.strerror(err) if err else 'failed'}")
        self._stop = ctypes.c_int(0)
        self._thread = threading.Thread(target=L.tw_keeper_run, args=(self._k, ctypes.byref(self._stop), host_speed),
                                        name="timewarp-keeper", daemon=True)
        self._thread.start()
        self.abort_reason: str | None = None
        self._pace = self._start_pace(pace_target_us, native_target_us, blend_us) if pace_target_us else None
        self.pace_summary: dict | None = None   # after close(): what the pace probe measured

    def _start_pace(self, target_us: float, native_target_us: float | None,
                    blend_us: float) -> subprocess.Popen | None:
        """The pace probe, outside emulation (no preload, no timewarp settings inherited)."""
        on, milli, mean, n = ctypes.c_long(), ctypes.c_long(), ctypes.c_long(), ctypes.c_int()
        self._lib.tw_keeper_pace_layout(ctypes.byref(on), ctypes.byref(milli), ctypes.byref(mean), ctypes.byref(n))
        native = []
        if native_target_us:
            non, nmilli, nmean = ctypes.c_long(), ctypes.c_long(), ctypes.c_long()
            self._lib.tw_keeper_native_layout(ctypes.byref(non), ctypes.byref(nmilli), ctypes.byref(nmean))
            native = ["--native", str(non.value), str(nmilli.value), str(nmean.value), repr(native_target_us)]
            if blend_us > 0:
                native += ["--blend", repr(blend_us)]
        env = {k: v for k, v in os.environ.items() if not k.startswith("TIMEWARP_")}
        env.pop("LD_PRELOAD", None)
        env.pop("LD_AUDIT", None)
        # run from "/": started in a checkout, `python -m` found the source folder timewarp/ first and the
        # probe died (ModuleNotFoundError), leaving the run on the fallback factor
        env["PYTHONSAFEPATH"] = "1"
        try:
            return subprocess.Popen([sys.executable, "-m", "timewarp.coordinator.pace", "--run", self.path,
                                     str(on.value), str(milli.value), str(mean.value), str(n.value),
                                     repr(target_us), *native],
                                    env=env, stdin=subprocess.DEVNULL, close_fds=True, cwd="/")
        except OSError:
            return None  # the static factor stays in use

    def status(self) -> dict:
        n = 1 << 16
        while True:
            buf = ctypes.create_string_buffer(n)
            need = self._lib.tw_keeper_status(self._k, buf, n)
            if need < n:
                return json.loads(buf.value.decode())
            n = need + 1

    def abort(self, reason: str) -> None:
        if self.abort_reason is None:
            self.abort_reason = reason
        self._lib.tw_keeper_abort(self._k, reason.encode()[:500])

    def close(self) -> None:
        if self._k is None:
            return
        self._stop.value = 1
        if self._pace is not None:
            died = self._pace.poll()   # ended by itself: no pace was measured after that
            if died:
                self.pace_summary = {"failed": died}
            self._pace.terminate()
            try:
                self._pace.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self._pace.kill()
            try:
                self.pace_summary = self.pace_summary or json.loads(Path(self.path + ".pace.json").read_text())
                os.unlink(self.path + ".pace.json")
            except (OSError, ValueError):
                pass
        self._thread.join(timeout=5)
        self._lib.tw_keeper_close(self._k, self.path.encode())
        self._k = None
