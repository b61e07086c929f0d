"""Run a command under emulation: find the shim libraries, build the environment, supervise the child.

The child and every process it starts load the fake CUDA stack through LD_PRELOAD (the core,
libtimewarp.so) and LD_AUDIT (libtimewarp_audit.so, which redirects every load of a real CUDA library,
whatever path or RPATH asks for it). Two frameworks find libraries their own way and are pointed at the shim
directly: Triton links its launcher with `-lcuda` from TRITON_LIBCUDA_PATH, vLLM's pynccl opens
VLLM_NCCL_SO_PATH.
"""
from __future__ import annotations

import errno
import hashlib
import importlib.resources
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, NamedTuple, Sequence

log = logging.getLogger(__name__)

# Everything the wheel installs into timewarp/_lib (CMakeLists.txt). A missing one would let the real
# library load, or nothing at all, so all are required.
LIBRARIES = (
    "libtimewarp.so", "libtimewarp_audit.so",
    "libcudart.so.13", "libcuda.so.1", "libnvidia-ml.so.1", "libcublas.so.13", "libcublasLt.so.13",
    "libcudnn.so.9", "libcudnn_graph.so.9", "libcudnn_ops.so.9", "libcudnn_cnn.so.9", "libcudnn_adv.so.9",
    "libnccl.so.2", "libcusparse.so.12", "libcusparseLt.so.0", "libcufft.so.12", "libcurand.so.10",
    "libcusolver.so.12", "libnvrtc.so.13", "libnvJitLink.so.13", "libcupti.so.13", "libcufile.so.0",
    "libnvshmem_host.so.3",
)
CORE = "libtimewarp.so"
AUDIT = "libtimewarp_audit.so"

# Signals passed on to the child. SIGINT from the terminal already reaches the child (same process group),
# so it is passed on only when it came some other way (see _sigint_from_terminal).
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


class LauncherError(RuntimeError):
    """Emulation cannot start (libraries missing, cache not writable); the message says why."""


# ------------------------------------------------------------------------------------------------ libraries
def lib_dir(check: bool = True) -> Path:
    """The folder holding the shim libraries: TIMEWARP_LIB_DIR if set (a development build), else the
    installed package's timewarp/_lib."""
    override = os.environ.get("TIMEWARP_LIB_DIR")
    if override:
        path, how = Path(override), "TIMEWARP_LIB_DIR"
    else:
        res = importlib.resources.files("timewarp") / "_lib"
        path, how = Path(str(res)), "importlib.resources.files('timewarp') / '_lib'"
    path = path.resolve()
    if check:
        missing = [name for name in LIBRARIES if not (path / name).is_file()]
        if missing:
            hint = ("" if override else
                    " Is timewarp installed from a build (`pip install .`)? Importing it from the source tree "
                    "finds no libraries.")
            what = "no shim libraries" if len(missing) == len(LIBRARIES) else f"missing {', '.join(missing)}"
            raise LauncherError(f"shim libraries not found: searched {path} (from {how}): {what}.{hint}")
    return path


def _user_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "timewarp"


def _symlink(target: Path, link: Path) -> None:
    """Point link at target, atomically (concurrent launches share the cache)."""
    try:
        if link.is_symlink() and os.readlink(link) == str(target):
            return
    except OSError:
        pass
    tmp = link.with_name(f".{link.name}.{os.getpid()}.tmp")
    try:
        tmp.unlink()
    except FileNotFoundError:
        pass
    os.symlink(target, tmp)
    os.replace(tmp, link)


def triton_libcuda_dir(lib: Path) -> Path:
    """A per-user folder with libcuda.so and libcuda.so.1 -> the fake libcuda.so.1 (Triton compiles its
    launcher with -L<TRITON_LIBCUDA_PATH> -lcuda, which needs the unversioned name), and libcudart.so -> the
    fake libcudart.so.13 (FlashInfer's JIT modules link -lcudart -lcuda: LIBRARY_PATH names this folder). One
    folder per library folder, so that two installations never point each other's programs at the wrong
    build."""
    tag = hashlib.sha256(str(lib).encode()).hexdigest()[:16]
    candidates = [_user_cache_dir() / "triton-libcuda" / tag,
                  Path(tempfile.gettempdir()) / f"timewarp-{os.getuid()}" / "triton-libcuda" / tag]
    errors = []
    for d in candidates:
        try:
            d.mkdir(parents=True, exist_ok=True)
            for name in ("libcuda.so", "libcuda.so.1"):
                _symlink(lib / "libcuda.so.1", d / name)
            _symlink(lib / "libcudart.so.13", d / "libcudart.so")
            return d
        except OSError as e:
            errors.append(f"{d}: {e.strerror or e}")
    raise LauncherError("cannot create the libcuda link folder for Triton: " + "; ".join(errors))


def pip_cuda_include() -> Path | None:
    """The CUDA headers that torch's pip wheels install (nvidia/cu13/include: cublasLt.h, nvrtc.h, ...), or None.
    Why: on a GPU-free machine the CUDA toolkit is absent or partial, and a library that compiles CUDA code
    as the program runs does not find them (vLLM's FlashInfer backend on the B200 built its attention
    launcher with nvcc and stopped at `cublasLt.h: No such file or directory`)."""
    try:
        import nvidia
    except ImportError:
        return None
    for root in getattr(nvidia, "__path__", []):
        for sub in ("cu13", "cu12"):
            inc = Path(root) / sub / "include"
            if (inc / "cublasLt.h").exists():
                return inc
    return None


# ------------------------------------------------------------------------------------------------ environment
def _prepend_path_list(value: str, existing: str | None) -> str:
    """value first, then the existing entries (':' or ' ' separated, as ld.so reads them) without it."""
    if not existing:
        return value
    rest = [p for p in existing.replace(" ", ":").split(":") if p and p != value]
    return ":".join([value, *rest])


def compile_cache_env(base: Mapping[str, str], lib: Path, profile: str) -> dict[str, str]:
    """Caches of compiled graphs keyed by the emulator that chose them. Inductor picks among its options by
    benchmarking them (pad_mm pads a GEMM if the padded one runs faster; Triton kernels' configs), and under
    emulation the benchmarks are the predictor's: a vLLM compile cache filled by another profile or core keeps
    that one's choices (a Qwen1.5-MoE graph compiled before misaligned GEMMs were slowed lacks the pad kernel
    the real card's has, and every later kernel is numbered otherwise). vLLM's and Inductor's caches go under
    ~/.cache/timewarp/<hash of the core library and the profile>, unless the user names them."""
    out = {}
    if base.get("VLLM_CACHE_ROOT") and base.get("TORCHINDUCTOR_CACHE_DIR"):
        return out
    h = hashlib.sha1()
    for f in (lib / CORE, Path(profile)):
        try:
            h.update(f.read_bytes())
        except OSError:
            h.update(str(f).encode())
    root = Path(base.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "timewarp" / h.hexdigest()[:12]
    if not base.get("VLLM_CACHE_ROOT"):
        out["VLLM_CACHE_ROOT"] = str(root / "vllm")
    if not base.get("TORCHINDUCTOR_CACHE_DIR"):
        out["TORCHINDUCTOR_CACHE_DIR"] = str(root / "inductor")
    return out


def timewarp_env(gpu: str, num_gpus: int = 1, report: str | os.PathLike | None = None,
                 trace: str | os.PathLike | None = None, strict: bool = False,
                 base_env: Mapping[str, str] | None = None, lib: Path | None = None) -> dict[str, str]:
    """The variables timewarp sets for a child (gpu is a catalog key), given the environment it starts from."""
    base = os.environ if base_env is None else base_env
    lib = lib_dir() if lib is None else lib
    links = str(triton_libcuda_dir(lib))
    env = {
        "LD_PRELOAD": _prepend_path_list(str(lib / CORE), base.get("LD_PRELOAD")),
        "LD_AUDIT": _prepend_path_list(str(lib / AUDIT), base.get("LD_AUDIT")),
        "TIMEWARP_LIB_DIR": str(lib),
        "TIMEWARP_AUDIT": "0",  # the LD_AUDIT redirector flips it to 1; the core warns if it stays 0
        "TIMEWARP_GPU": gpu,
        "TIMEWARP_NUM_GPUS": str(num_gpus),
        "TRITON_LIBCUDA_PATH": links,
        # JIT builds that link the CUDA runtime and driver (-lcudart -lcuda) link the fake ones
        "LIBRARY_PATH": _prepend_path_list(links, base.get("LIBRARY_PATH")),
        "VLLM_NCCL_SO_PATH": str(lib / "libnccl.so.2"),
        # measured kernel profiles (predictors/profile_build.py); other GPUs are scaled from them; a profile
        # the user names instead is kept (calibrating the host costs runs with one that has none)
        "TIMEWARP_PROFILE": base.get("TIMEWARP_PROFILE") or str(lib.parent / "predictors" / "data" / "h200" / "profile.tsv"),
        # timewarp/_site/sitecustomize.py: host-visible results of small PyTorch ops (integrations/torch_shadow.py)
        "PYTHONPATH": _prepend_path_list(str(lib.parent / "_site"), base.get("PYTHONPATH")),
    }
    inc = pip_cuda_include()
    if inc is not None:   # after the user's: a toolkit's own headers come first
        env["CPATH"] = ":".join(p for p in (base.get("CPATH"), str(inc)) if p)
    env.update(compile_cache_env(base, lib, env["TIMEWARP_PROFILE"]))
    env["TIMEWARP_HOST_CPUS"] = str(host_cpus(base, num_gpus))
    if report is not None:
        env["TIMEWARP_REPORT"] = os.path.abspath(report)
    if trace is not None:
        env["TIMEWARP_TRACE"] = os.path.abspath(trace)
    if strict:
        env["TIMEWARP_STRICT"] = "1"
    # what a CPU second is priced at where the host pace is not measured (shim_c/core/vclock.c)
    speed = host_pricing(base).speed
    if not base.get("TIMEWARP_HOST_SPEED"):
        env["TIMEWARP_HOST_SPEED_FALLBACK"] = f"{speed:.4f}"
    # how long a message its reader has not seen yet holds the run's clock (shim_c/libc/message.c)
    _positive(base, "TIMEWARP_MSG_HOLD_US", "real microseconds; 0 turns the hold off", zero_ok=True)
    # how long, at most, a drain of a feeder's queue waits for its inputs (shim_c/core/vclock.c, tw_sync_inputs)
    _positive(base, "TIMEWARP_SYNC_INPUTS_US", "real microseconds; 0 does not wait", zero_ok=True)
    # switches of the message stamps, the busy reader's wait, eventfd wake-ups (shim_c/libc/message.c,
    # wait.c), the clock of an event loop's pool work (integrations/executor_clock.py) and of vLLM's EngineCore
    # input thread (integrations/vllm_plugin/input_clock.py)
    # and of Python's GIL between an event loop and its pool's work (shim_c/core/gil.c), a wait's first
    # look before the keeper may jump (shim_c/core/vclock.c, tw_tk_first_look), aiohttp's eager request writes
    # on Python < 3.12 (integrations/aiohttp_eager.py), the power cap's slowdown of sustained compute-bound work
    # (shim_c/core/power.c)
    for name in ("TIMEWARP_MSG_STAMPS", "TIMEWARP_POLL_SYNC", "TIMEWARP_SIGNAL_FIRST", "TIMEWARP_EXECUTOR_CLOCK",
                 "TIMEWARP_VLLM_INPUT_CLOCK", "TIMEWARP_GIL_MODEL", "TIMEWARP_WAIT_FIRST_LOOK",
                 "TIMEWARP_AIOHTTP_EAGER", "TIMEWARP_POWER"):
        _switch(base, name)
    _positive(base, "TIMEWARP_GIL_WAIT_US", "real microseconds a pool's request for the GIL waits at most", zero_ok=True)
    # every step of vLLM's detokenizer priced as native code, not only each request's first (native_price.py)
    _switch(base, "TIMEWARP_DETOK_NATIVE_ALL", "0 (each request's first step only, the default) or 1 (every step)")
    return env


# ------------------------------------------------------------------------------------------------ the report
@dataclass
class Report:
    """Where the core appends one JSON line per emulated process. A user's file is never truncated: only the
    lines written after `offset` (its size at launch) belong to this run."""

    path: Path
    offset: int = 0
    temporary: bool = False
    _tmpdir: str | None = field(default=None, repr=False)

    @classmethod
    def open(cls, path: str | os.PathLike | None) -> "Report":
        if path is None:
            tmpdir = tempfile.mkdtemp(prefix="timewarp-")
            return cls(Path(tmpdir) / "report.jsonl", 0, True, tmpdir)
        p = Path(path).absolute()
        try:
            offset = p.stat().st_size
        except FileNotFoundError:
            offset = 0
        return cls(p, offset)

    def live_files(self) -> list[Path]:
        """Snapshots (<report>.<pid>.live) of processes that ended without exiting normally."""
        return sorted(self.path.parent.glob(self.path.name + ".*.live"))

    def absorb_live(self) -> None:
        """A process that was killed left no line, only its last snapshot: append that, marked `killed`, so
        that the report holds every process; then remove the snapshots."""
        done = {r.get("pid") for r in self.records()}
        for live in self.live_files():
            try:
                rec = json.loads(live.read_text())
            except (OSError, json.JSONDecodeError):
                rec = None
            if isinstance(rec, dict) and rec.get("pid") not in done:
                rec["killed"] = True
                with open(self.path, "a") as f:
                    f.write(json.dumps(rec) + "\n")
            live.unlink(missing_ok=True)

    def records(self) -> list[dict]:
        """This run's process records; lines that are not JSON objects are skipped with a warning."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            data = b""
        return self._lines(data)

    def _lines(self, data: bytes) -> list[dict]:
        out = []
        for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                log.warning("report %s: line %d is not JSON (a process killed while writing?)", self.path, n)
                continue
            if isinstance(rec, dict):
                out.append(rec)
        return out

    def exists(self) -> bool:
        return self.path.is_file()

    def cleanup(self) -> None:
        if self._tmpdir:
            shutil.rmtree(self._tmpdir, ignore_errors=True)


def format_seconds(x: object) -> str:
    if not isinstance(x, (int, float)) or isinstance(x, bool):
        return "?"
    ax = abs(x)
    if ax >= 1 or ax == 0:
        return f"{x:.4g} s"
    if ax >= 1e-3:
        return f"{x * 1e3:.4g} ms"
    return f"{x * 1e6:.4g} us"


def _count(x: object) -> str:
    return str(x) if isinstance(x, int) and not isinstance(x, bool) else "?"


def layer_shares(records: Iterable[Mapping]) -> dict[str, float]:
    """The share of the records' GPU busy time each predictor layer timed (the devices' busy_by_layer: exact,
    interp, nearest, step, sibling, roofline, preset), largest first; {} when the records have none."""
    total: dict[str, float] = {}
    for rec in records:
        for dev in rec.get("devices") or []:
            by = dev.get("busy_by_layer") if isinstance(dev, Mapping) else None
            if isinstance(by, Mapping):
                for k, v in by.items():
                    if isinstance(v, (int, float)) and v > 0:
                        total[k] = total.get(k, 0.0) + v
    s = sum(total.values())
    return {k: v / s for k, v in sorted(total.items(), key=lambda kv: -kv[1])} if s > 0 else {}


def summarize(records: Iterable[Mapping], gpu_name: str | None = None, max_processes: int = 20) -> list[str]:
    """Lines summing up a run's report: each process's predicted wall time, per-device GPU busy time and
    kernel counts, and the unimplemented calls it hit. Tolerates missing or mistyped fields.

    A record, as shim_c/core/trace.c writes it: {"pid", "argv" (command line), "gpu", "virtual_s",
    "devices": [{"index", "busy_s", "kernels", "copies", "mem_used"}], "unimplemented": {name: {"lib", "calls"}}}."""
    records = list(records)
    if not records:
        return []
    lines = [f"timewarp: predicted on {gpu_name}:" if gpu_name else "timewarp: predicted:"]
    for rec in records[:max_processes]:
        pid = rec.get("pid", "?")
        who = f"pid {pid}"
        cmd = rec.get("argv") or rec.get("argv0")  # the core writes the command line as "argv"
        if isinstance(cmd, list):
            cmd = " ".join(map(str, cmd))
        if isinstance(cmd, str) and cmd.strip():
            first, _, rest = cmd.strip().partition(" ")
            cmd = " ".join(filter(None, (os.path.basename(first), rest)))
            who += f" ({cmd[:57] + '...' if len(cmd) > 60 else cmd})"
        vs = rec.get("virtual_s")
        ended = " (killed: last snapshot, taken up to 2 s before the end)" if rec.get("killed") else ""
        lines.append(f"  {who}: wall {format_seconds(vs)}{ended}")
        devices = rec.get("devices")
        if isinstance(devices, list):
            for dev in devices:
                if not isinstance(dev, Mapping):
                    continue
                busy = dev.get("busy_s")
                util = ""
                if isinstance(busy, (int, float)) and isinstance(vs, (int, float)) and vs > 0:
                    util = f" ({100.0 * busy / vs:.0f}%)"
                extra = ""
                copies = dev.get("copies", dev.get("memcpy"))
                if copies is not None:
                    extra = f", {_count(copies)} copies"
                lines.append(f"    GPU {dev.get('index', '?')}: busy {format_seconds(busy)}{util}, "
                             f"{_count(dev.get('kernels'))} kernels{extra}")
                shares = layer_shares([rec])
                if shares:
                    lines.append("      timed by: " + ", ".join(f"{k} {v:.0%}" for k, v in shares.items()))
        unimpl = rec.get("unimplemented")
        if isinstance(unimpl, Mapping) and unimpl:
            # the core writes {name: {"lib": ..., "calls": n}}; a bare count is accepted too
            def calls(v):
                v = v.get("calls") if isinstance(v, Mapping) else v
                return v if isinstance(v, int) else 0
            items = sorted(((name, calls(v)) for name, v in unimpl.items()), key=lambda kv: (-kv[1], kv[0]))
            shown = ", ".join(f"{name} x{n}" for name, n in items[:8])
            more = f", and {len(items) - 8} more" if len(items) > 8 else ""
            lines.append(f"    unimplemented calls: {shown}{more}")
    if len(records) > max_processes:
        lines.append(f"  ... and {len(records) - max_processes} more processes")
    return lines


# ------------------------------------------------------------------------------------------------ the child
@dataclass
class CommandError(Exception):
    """The command could not be started; message and exit code follow the shell's conventions."""

    message: str
    code: int

    def __str__(self) -> str:
        return self.message


TRACE_HEAD = b'{"displayTimeUnit":"ns","traceEvents":[\n'   # shim_c/core/trace.c's, as it writes them
TRACE_END = b"]}\n"    # after every append
RECORD_END = b"}}\n"   # the end of each record's line (names are JSON-escaped: no newline inside one)


def close_trace(path: str | os.PathLike) -> str | None:
    """A trace whose last writer was killed while it appended (vLLM kills its engine core at shutdown) ends
    inside a record: cut it after the last whole record and close the JSON again. Returns what was mended, or
    None."""
    p = Path(path)
    if not p.exists():
        return None
    with open(p, "rb+") as f:
        size = f.seek(0, os.SEEK_END)
        f.seek(max(0, size - len(TRACE_END)))
        if f.read() == TRACE_END:
            return None
        # the last whole record, searched backwards a chunk at a time (a trace can be hundreds of MB)
        end, pos, tail = None, size, b""
        while pos > 0 and end is None:
            start = max(0, pos - (1 << 20))
            f.seek(start)
            chunk = f.read(pos - start) + tail
            i = chunk.rfind(RECORD_END)
            if i >= 0:
                end = start + i + len(RECORD_END)
            pos, tail = start, chunk[:len(RECORD_END)]
        if end is None:   # not one whole record: the header alone
            end = 0
        f.truncate(end)
        f.seek(end)
        f.write((TRACE_HEAD if end == 0 else b"") + TRACE_END)
    return "a process was killed while appending; cut after the last whole record"


def resolve_command(argv0: str, path: str | None) -> str:
    """The executable for argv0, or CommandError with bash's message and code (127 not found, 126 not
    executable)."""
    if "/" not in argv0:
        found = shutil.which(argv0, path=path if path is not None else os.defpath)
        if not found:
            raise CommandError(f"timewarp: {argv0}: command not found", 127)
        return found
    p = Path(argv0)
    if not p.exists():
        raise CommandError(f"timewarp: {argv0}: No such file or directory", 127)
    if p.is_dir():
        raise CommandError(f"timewarp: {argv0}: Is a directory", 126)
    if not os.access(p, os.X_OK):
        raise CommandError(f"timewarp: {argv0}: Permission denied", 126)
    return argv0


def _sigint_from_terminal() -> bool:
    """True when we are in the terminal's foreground process group: a Ctrl-C then reached the child (same
    group) directly, and forwarding it would deliver it twice."""
    for fd in (0, 1, 2):
        try:
            if os.isatty(fd):
                return os.tcgetpgrp(fd) == os.getpgrp()
        except OSError:
            continue
    return False


def run_child(argv: Sequence[str], env: Mapping[str, str]) -> int:
    """Run argv with env, stdio inherited, signals forwarded; the child's exit status (negative: killed by
    that signal, as subprocess reports it). A child still running TIMEWARP_STOP_GRACE_S real seconds after a
    signal is killed with everything it started, and what it left behind is ended once it has exited
    (integrations/process_tree.py says why)."""
    from . import process_tree
    exe = resolve_command(argv[0], env.get("PATH"))
    grace = _positive(env, "TIMEWARP_STOP_GRACE_S", "real seconds a signalled program has to end before its "
                      "processes are killed") or process_tree.STOP_GRACE_S
    keep = set(process_tree.descendants(os.getpid()))   # the coordinator's own (the pace process)
    process_tree.become_subreaper()
    proc: subprocess.Popen | None = None
    killer: threading.Timer | None = None   # started by the first signal

    def kill_child():
        if proc.poll() is None:
            sys.stderr.write(f"timewarp: {argv[0]} still running {grace:g} s after the signal; killing it and "
                             "every process it started\n")
            process_tree.kill_tree(proc.pid)

    def forward(signum, _frame):
        nonlocal killer
        if proc is None or proc.returncode is not None:
            return
        if killer is None:
            killer = threading.Timer(grace, kill_child)
            killer.daemon = True
            killer.start()
        if signum == signal.SIGINT and _sigint_from_terminal():
            return
        try:
            proc.send_signal(signum)
        except ProcessLookupError:
            pass

    previous = {}
    for sig in FORWARDED_SIGNALS:
        try:
            previous[sig] = signal.signal(sig, forward)
        except (ValueError, OSError):  # not the main thread, or not allowed
            pass
    try:
        try:
            proc = subprocess.Popen([exe, *argv[1:]], env=dict(env))
        except OSError as e:
            if e.errno == errno.ENOEXEC:
                raise CommandError(f"timewarp: {argv[0]}: cannot execute binary file: Exec format error", 126)
            if e.errno in (errno.EACCES, errno.EPERM):
                raise CommandError(f"timewarp: {argv[0]}: Permission denied", 126)
            if e.errno == errno.ENOENT:  # e.g. a script whose interpreter is missing
                raise CommandError(f"timewarp: {argv[0]}: {e.strerror}", 127)
            raise CommandError(f"timewarp: {argv[0]}: {e.strerror or e}", 126)
        while True:
            try:
                return proc.wait()
            except KeyboardInterrupt:  # only if SIGINT was not ours to handle; keep waiting for the child
                continue
    finally:
        if killer is not None:
            killer.cancel()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        left = process_tree.end_leftovers(keep)
        if left:
            sys.stderr.write(f"timewarp: ended {len(left)} process(es) {argv[0]} left running "
                             f"({', '.join(map(str, left))})\n")


def exit_status(returncode: int) -> int:
    """A shell's view of a child's status: 128+N for a child killed by signal N."""
    return 128 - returncode if returncode < 0 else returncode


def die_like(returncode: int) -> int:
    """For a child killed by a signal, kill ourselves with the same signal (so that our parent sees what a
    shell would show); returns the exit status to use if that did not end us."""
    if returncode < 0:
        sig = -returncode
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            try:
                sys.stdout.flush()
                sys.stderr.flush()
                signal.signal(sig, signal.SIG_DFL)
                os.kill(os.getpid(), sig)
            except (OSError, ValueError):
                pass
    return exit_status(returncode)


def _switch(base: Mapping[str, str], name: str, expected: str = "0 (off) or 1 (on, the default)") -> None:
    """A clear error unless variable name is unset, empty, 0 or 1 (what each means: expected)."""
    if base.get(name) not in (None, "", "0", "1"):
        raise LauncherError(f"{name}={base[name]!r}: expected {expected}")


def _positive(base: Mapping[str, str], name: str, what: str, zero_ok: bool = False) -> float | None:
    """The positive (or, zero_ok, non-negative) number variable name holds (None when unset); a clear error
    otherwise."""
    value = base.get(name)
    if not value:
        return None
    try:
        x = float(value)
    except ValueError:
        x = -1.0
    if not (x >= 0 if zero_ok else x > 0) or x == float("inf"):
        raise LauncherError(f"{name}={value!r}: expected a {'zero or positive' if zero_ok else 'positive'} number ({what})")
    return x


# The target machine's CPU count per GPU: the lent H200 machines have 16 cores with one GPU and 32 with two
HOST_CPUS_PER_GPU = 16


def host_cpus(base: Mapping[str, str], num_gpus: int) -> int:
    """How many CPUs an emulated program's os.cpu_count() reports (timewarp/_site/sitecustomize.py):
    TIMEWARP_HOST_CPUS, else HOST_CPUS_PER_GPU per GPU. Why: programs size their thread pools by it
    (asyncio's default executor: min(32, CPUs + 4) threads), and that changes how their work interleaves.
    `vllm bench serve` runs two lookups per request in that pool; with this machine's 2 CPUs (6 threads) its
    bursts reached the server 20-60% sooner than on the 16-core H200 host, with 20 threads as there
    (predictors/data/h200/vllm_2026-12-05a, client_intake.jsonl)."""
    value = base.get("TIMEWARP_HOST_CPUS")
    if not value:
        return HOST_CPUS_PER_GPU * max(1, num_gpus)
    if not value.isdigit() or int(value) < 1:
        raise LauncherError(f"TIMEWARP_HOST_CPUS={value!r}: expected a positive whole number (the CPUs an "
                            "emulated program's os.cpu_count() reports)")
    return int(value)


class Pricing(NamedTuple):
    """How emulated programs' CPU time is charged (coordinator/pace.py)."""
    speed: float                     # the static factor (where no pace is measured)
    pace_target_us: float | None     # the pace probe's target, None when it does not run
    native_target_us: float | None   # the native probe's target, None: native code on Python's pace
    blend_us: float                  # Python's pace blended with the native probe's (0: not)
    kernel_price: float | None = None  # virtual ns per ns of system time, None: charged as the rest


def host_pricing(base: Mapping[str, str] | None = None) -> Pricing:
    """The pricing of CPU time: the measured host pace (coordinator/pace.py; until it is measured, and
    without a coordinator, its fallback factor) unless TIMEWARP_HOST_SPEED fixes a factor or
    TIMEWARP_HOST_PACE=0 turns it off (CPU time charged as measured). Native code has a pace of its own, and
    the Python pace is blended with it, unless TIMEWARP_NATIVE_PACE=0 (then native code is charged Python's
    pace, unblended). Kernel time (system calls) has a fixed price of its own with the pace (kernel_price)."""
    base = os.environ if base is None else base
    speed = _positive(base, "TIMEWARP_HOST_SPEED", "target-host CPU seconds per CPU second here")
    # without the pace, kernel time is priced apart only where TIMEWARP_KERNEL_PRICE says so
    given = kernel_price(base, 1.0) if base.get("TIMEWARP_KERNEL_PRICE") else None
    if speed is not None:
        return Pricing(speed, None, None, 0.0, given)
    if base.get("TIMEWARP_HOST_PACE", "1") in ("0", "off", "no"):
        return Pricing(1.0, None, None, 0.0, given)
    from timewarp.coordinator import pace
    # the defaults price the median H200 host measured; TIMEWARP_HOST_SLOWDOWN scales them for a slower (or,
    # below 1, faster) one: H200 leases' hosts ran vLLM's host work 0.72-1.42x the median's time
    # (docs/LIMITATIONS.md, "Host time")
    slow = _positive(base, "TIMEWARP_HOST_SLOWDOWN", "the target host's CPU time for the same work over the "
                     "median H200 host's") or 1.0
    target = _positive(base, "TIMEWARP_PACE_TARGET_US",
                       "the host pace probe's CPU time on the target host, in microseconds") or pace.TARGET_US * slow
    if base.get("TIMEWARP_NATIVE_PACE", "1") in ("0", "off", "no"):
        return Pricing(pace.fallback_factor(target), target, None, 0.0, kernel_price(base, slow))
    native = _positive(base, "TIMEWARP_NATIVE_TARGET_US",
                       "the native probe's CPU time on the target host, in microseconds") or pace.NATIVE_TARGET_US * slow
    blend = _positive(base, "TIMEWARP_PACE_BLEND_US", "the native probe's time at which the blend leaves the "
                      "Python pace as it is, in microseconds; 0 turns the blend off", zero_ok=True)
    return Pricing(pace.fallback_factor(target), target, native, pace.BLEND_US * slow if blend is None else blend,
                   kernel_price(base, slow))


def kernel_price(base: Mapping[str, str], slow: float) -> float | None:
    """The price of the kernel's CPU time (system calls), apart from the pace (shim_c/core/vclock.c): virtual ns
    per ns of a thread's system time. TIMEWARP_KERNEL_PRICE sets it; 0 charges it at the pace, as user time."""
    from timewarp.coordinator import pace
    given = _positive(base, "TIMEWARP_KERNEL_PRICE", "virtual ns charged per ns of system time here; 0 charges it "
                      "at the host pace", zero_ok=True)
    if given is None:
        return min(pace.KERNEL_PRICE * slow, KERNEL_PRICE_MAX)
    return min(given, KERNEL_PRICE_MAX) or None


KERNEL_PRICE_MAX = 20.0   # the pace's own bound (coordinator/pace.py publishes at most 20x)


def native_cold_env(pricing: Pricing, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """TIMEWARP_NATIVE_COLD_US for the run's processes: the CPU us of a cold tokenizer call that
    integrations/native_price.py forgives each tokenization. By default (or `auto`) this machine's, measured
    now (coordinator/pace.py's cold_call_us, about 0.3 s); a number stays as given, 0 turns it off. Measured
    over vLLM cases 1-6, six runs with it and six without (docs/VLLM.md, forty-fourth session): the mean
    TTFT error over the runs came to 2.9% per case with it, 4.4% without (case 3 -3.0% against -9.0%), and
    the emulated tokenizer pool to the real hosts' pace. None where native code is not priced apart or the
    tokenizer is missing."""
    base = os.environ if base is None else base
    if pricing.native_target_us is None:
        return {}
    if base.get("TIMEWARP_NATIVE_COLD_US", "auto") in ("auto", ""):
        from timewarp.coordinator import pace
        us = pace.cold_call_us()
        return {} if us is None else {"TIMEWARP_NATIVE_COLD_US": f"{us:.0f}"}
    given = _positive(base, "TIMEWARP_NATIVE_COLD_US",
                      "the CPU us of a cold tokenizer call to forgive, 0 for none, or auto", zero_ok=True)
    return {"TIMEWARP_NATIVE_COLD_US": f"{given:g}"} if given else {}


def start_coordinator(lib: Path, gpu: str, num_gpus: int, topology: str, join: str | None, listen: str | None,
                      token: str | None):
    """The run's clock: a new coordinator (returned, to be closed by the caller) or, with join=HOST:PORT, an
    existing one (None returned). Returns (coordinator or None, environment for the child)."""
    from timewarp.coordinator import server

    pricing = host_pricing()
    # what the run's processes read of the pricing besides the coordinator's own environment
    priced = native_cold_env(pricing)
    if pricing.kernel_price:
        priced["TIMEWARP_KERNEL_PRICE"] = f"{pricing.kernel_price:.4f}"
    try:
        if join:
            reply = server.join(join, token)
            return None, {"TIMEWARP_CLOCK": reply.clock_path, "TIMEWARP_COORDINATOR": join,
                          "TIMEWARP_TOPOLOGY": reply.topology, **priced}
        coord = server.Coordinator(lib, gpu, num_gpus, topology=topology, listen=listen or "127.0.0.1:0",
                                   token=token, host_speed=pricing.speed, pace_target_us=pricing.pace_target_us,
                                   native_target_us=pricing.native_target_us, blend_us=pricing.blend_us)
    except server.CoordinatorError as e:
        raise LauncherError(str(e)) from None
    except Exception as e:  # the keeper library, the clock file
        raise LauncherError(f"cannot start the coordinator: {e}") from None
    return coord, {**coord.env(), "TIMEWARP_TOPOLOGY": topology, **priced}


def gpu_accuracy(gpu: str) -> str:
    """The catalog's statement of what the predictions for this GPU were checked against ('' if none)."""
    from timewarp.predictors import catalog
    try:
        return catalog.get(gpu).accuracy
    except catalog.CatalogError:
        return ""


def launch(argv: Sequence[str], gpu: str, num_gpus: int = 1, report: str | os.PathLike | None = None,
           trace: str | os.PathLike | None = None, strict: bool = False, gpu_name: str | None = None,
           summary: bool = True, topology: str = "", join: str | None = None, listen: str | None = None,
           token: str | None = None) -> int:
    """`timewarp run`: run argv under emulation, print the report's summary to stderr, return the exit
    status (after re-raising a fatal signal on ourselves). Every process of the run lives on one virtual
    clock, kept by the coordinator this starts (or, with join=HOST:PORT, by an existing one). Raises
    LauncherError or CommandError."""
    lib = lib_dir()
    from .shadow_ext import prebuild
    prebuild()
    rep = Report.open(report)
    coord = None
    try:
        env = dict(os.environ)
        env.update(timewarp_env(gpu, num_gpus, rep.path, trace, strict, base_env=os.environ, lib=lib))
        if trace is not None:   # the run's GPU processes append to one trace (shim_c/core/trace.c): not to an older one
            try:
                Path(trace).unlink(missing_ok=True)
                Path(trace).touch()   # writable: said now, not after the run
                Path(trace).unlink()
            except OSError as e:
                raise LauncherError(f"--trace {trace}: cannot write it: {e.strerror or e}") from e
        coord, cenv = start_coordinator(lib, gpu, num_gpus, topology, join, listen, token)
        env.update(cenv)
        pace = None
        try:
            rc = run_child(argv, env)
        finally:
            expired = 0
            if coord is not None:
                try:
                    expired = coord.clock.status().get("holds_expired", 0)
                except Exception:   # a status the keeper could not give: the run's results stand
                    pass
                coord.close()
                pace = coord.clock.pace_summary
                coord = None
        rep.absorb_live()
        try:
            mended = close_trace(trace) if trace is not None else None
        except OSError as e:   # the run's results stand; say why the trace may be cut
            mended = f"not checked: {e}"
        if summary:
            lines = summarize(rep.records(), gpu_name)
            if lines and pace and "failed" in pace:
                lines.append(f"  host pace: NOT measured (the probe exited with status {pace['failed']}); CPU time "
                             f"here charged x{env.get('TIMEWARP_HOST_SPEED_FALLBACK', '?')} (the fallback)")
            elif lines and pace:
                lines.append(f"  host pace: CPU time here charged x{pace['mean']:.2f} on average (p10 "
                             f"{pace['p10']:.2f}, p90 {pace['p90']:.2f}; coordinator/pace.py)")
                if "native" in pace:
                    n = pace["native"]
                    lines.append(f"  native pace: marked native code (a tokenizer's) charged x{n['mean']:.2f} on "
                                 f"average (p10 {n['p10']:.2f}, p90 {n['p90']:.2f})")
                    if cenv.get("TIMEWARP_NATIVE_COLD_US"):
                        lines.append(f"  cold tokenizer call: up to {cenv['TIMEWARP_NATIVE_COLD_US']} us of this "
                                     "machine's CPU not charged per tokenization (a cache refill; coordinator/pace.py)")
                # priced apart with or without the native pace (host_pricing)
                if cenv.get("TIMEWARP_KERNEL_PRICE"):
                    lines.append(f"  kernel time: system calls' CPU charged x{cenv['TIMEWARP_KERNEL_PRICE']} "
                                 "(a fixed price: it does not follow the pace here; coordinator/pace.py)")
            accuracy = gpu_accuracy(gpu)
            if lines and accuracy:
                lines.append(f"  accuracy on this GPU: {accuracy}")
            if lines and expired and env.get("TIMEWARP_MSG_LOG") == "1":
                # a channel read without a wait (a blocking recv, a read of data already there) is never
                # marked seen: its hold runs out too, so this counts more than readers that ran late
                lines.append(f"  messages: {expired} holds ran out before a wait saw their message "
                             f"(TIMEWARP_MSG_HOLD_US; shim_c/libc/message.c)")
            if lines:
                if report is not None:
                    lines.append(f"  report: {rep.path}")
                if trace is not None:
                    lines.append(f"  trace: {os.path.abspath(trace)}" + (f" ({mended})" if mended else ""))
                sys.stderr.write("\n".join(lines) + "\n")
                sys.stderr.flush()
    finally:
        if coord is not None:
            coord.close()
        rep.cleanup()
    return die_like(rc)
