"""`timewarp vllm-bench`: vLLM's own server and benchmark client on one virtual clock, and what they predict.

    timewarp vllm-bench [--gpu H200] [--model DIR] [--input-len 512] [--output-len 128] [--num-prompts 32]
                        [--concurrency 8] [--request-rate R] [--range-ratio X] [--repeat 1]
                        [--serve-arg ARG ...] [--bench-arg ARG ...] [--logs DIR]

Two halves:
- the driver (`python -m timewarp.integrations.vllm_bench --driver SPEC.json`), which runs under emulation
  inside one `timewarp run`: it starts `vllm serve MODEL --load-format dummy` exactly as a user would (no
  other flag unless asked), polls /health, runs `vllm bench serve` (random dataset, fixed lengths,
  --ignore-eos) against it (--repeat N: N times, the K-th with --seed K so that no run hits the prefix
  cache an earlier one filled), then stops the server's whole process group. Everything it starts inherits
  the run's clock, so the client's time.perf_counter() measures the server's predicted time;
- the command (this module's `run_benchmark`, called by the CLI outside emulation), which launches the
  driver, watches its marker files in real time (time to engine ready, benchmark wall time), and prints
  the benchmark's metrics from its saved result JSON with the wall-clock figures beside them (with several
  runs, each metric's mean and range: host-bound metrics such as TTFT vary between runs on a shared
  machine, docs/LIMITATIONS.md).
The default model is the embedded Llama-3-8B-shaped folder (config and a tokenizer, no weights).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

EMBEDDED_MODEL = Path(__file__).resolve().parent / "models" / "llama3-8b-shape"


class BenchError(Exception):
    """The benchmark could not run (the server died, did not become ready, the client failed)."""


@dataclass
class Spec:
    model: str
    port: int
    input_len: int
    output_len: int
    num_prompts: int
    concurrency: int | None   # None: no --max-concurrency (an open-loop run sends at its rate)
    workdir: str
    serve_args: list[str] = field(default_factory=list)
    bench_args: list[str] = field(default_factory=list)
    repeat: int = 1
    ready_timeout_s: float = 1800.0   # real seconds on this machine (2 cores: about 60-120 s)

    @property
    def ready_file(self) -> Path: return Path(self.workdir) / "ready"
    @property
    def result_file(self) -> Path: return Path(self.workdir) / "result.json"
    @property
    def result_files(self) -> list[Path]:
        return [self.result_file] + [Path(self.workdir) / f"result-{k}.json" for k in range(1, self.repeat)]
    @property
    def serve_log(self) -> Path: return Path(self.workdir) / "serve.log"
    @property
    def bench_log(self) -> Path: return Path(self.workdir) / "bench.log"


# ------------------------------------------------------------------------------------------------ the driver
def _vllm(*args: str) -> list[str]:
    # the module, not the `vllm` script: its shebang may name another interpreter
    return [sys.executable, "-m", "vllm.entrypoints.cli.main", *args]


def _real_s() -> float:
    """Real seconds (since boot): the emulated clocks are virtual, and a start-up deadline is a real one."""
    with open("/proc/uptime") as f:
        return float(f.read().split()[0])


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
            return r.status == 200
    except OSError:
        return False


def _tail(path: Path, n: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "(no log)"


def _stop(proc: subprocess.Popen) -> None:
    """SIGINT to the server's process group (what Ctrl-C does), then SIGKILL to whatever is left."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=30)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def drive(spec: Spec) -> int:
    env = dict(os.environ, HF_HUB_OFFLINE="1", VLLM_NO_USAGE_STATS="1")
    with open(spec.serve_log, "wb") as log:
        server = subprocess.Popen(
            _vllm("serve", spec.model, "--load-format", "dummy", "--port", str(spec.port), *spec.serve_args),
            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)

    def on_signal(signum, frame):
        _stop(server)
        sys.exit(128 + signum)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        t0, r0 = time.monotonic(), _real_s()
        while not _healthy(spec.port):
            if server.poll() is not None:
                raise BenchError(f"vllm serve exited with status {server.returncode} before it was ready; "
                                 f"last lines of {spec.serve_log}:\n{_tail(spec.serve_log)}"
                                 + known_cause(spec.serve_log))
            if _real_s() - r0 > spec.ready_timeout_s:
                raise BenchError(f"vllm serve not ready after {spec.ready_timeout_s:.0f} s; "
                                 f"last lines of {spec.serve_log}:\n{_tail(spec.serve_log)}")
            time.sleep(1.0)
        spec.ready_file.write_text(json.dumps({"virtual_ready_s": time.monotonic() - t0}))
        for k, result in enumerate(spec.result_files):
            seed = ["--seed", str(k)] if k and "--seed" not in spec.bench_args else []
            cmd = _vllm("bench", "serve", "--backend", "vllm", "--port", str(spec.port), "--model", spec.model,
                        "--dataset-name", "random", "--random-input-len", str(spec.input_len),
                        "--random-output-len", str(spec.output_len), "--ignore-eos",
                        "--num-prompts", str(spec.num_prompts),
                        *(["--max-concurrency", str(spec.concurrency)] if spec.concurrency else []),
                        "--save-result", "--result-dir", str(result.parent),
                        "--result-filename", result.name, *seed, *spec.bench_args)
            with open(spec.bench_log, "ab") as log:
                rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env).returncode
            if rc != 0:
                raise BenchError(f"vllm bench serve exited with status {rc}; last lines of {spec.bench_log}:\n"
                                 f"{_tail(spec.bench_log)}")
        return 0
    except BenchError as e:
        sys.stderr.write(f"timewarp vllm-bench: {e}\n")
        return 1
    finally:
        _stop(server)


# ------------------------------------------------------------------------------------------------ the command
def known_cause(serve_log: Path) -> str:
    """A sentence on a start-up failure whose cause the log shows deep in a traceback, '' otherwise."""
    try:
        text = serve_log.read_text(errors="replace")
    except OSError:
        return ""
    if "Ninja build failed" in text or ("flashinfer" in text and "nvcc" in text and "not found" in text):
        # vLLM's FlashInfer backend (the B200's default) compiles its attention launcher on first use
        return ("\ncause: vLLM's FlashInfer attention backend compiles CUDA code with nvcc when it is first "
                "used (the default backend on the B200), and that build failed (above). It needs nvcc (the CUDA "
                "toolkit, or `pip install nvidia-cuda-nvcc`) on this machine.")
    return ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Watch(threading.Thread):
    """Real time at which the driver's marker files appear."""

    def __init__(self, spec: Spec):
        super().__init__(daemon=True)
        self.spec, self.t0 = spec, time.monotonic()
        self.ready_wall = self.result_wall = None
        self.stop = threading.Event()

    def run(self):
        while not self.stop.wait(0.2):
            now = time.monotonic() - self.t0
            if self.ready_wall is None and self.spec.ready_file.exists():
                self.ready_wall = now
            if self.result_wall is None and self.spec.result_files[-1].exists():
                self.result_wall = now


METRICS = [("mean_ttft_ms", "TTFT mean", "ms"), ("median_ttft_ms", "TTFT median", "ms"),
           ("p99_ttft_ms", "TTFT p99", "ms"), ("mean_tpot_ms", "TPOT mean", "ms"),
           ("median_tpot_ms", "TPOT median", "ms"), ("mean_itl_ms", "ITL mean", "ms"),
           ("p99_itl_ms", "ITL p99", "ms"), ("output_throughput", "output throughput", "tok/s"),
           ("request_throughput", "request throughput", "req/s"), ("duration", "benchmark duration", "s")]


def format_result(results: list[dict], watch: _Watch, total_wall: float, virtual_ready: float | None,
                  gpu: str) -> str:
    """The metrics of one benchmark run, or with several each metric's mean and range over them."""
    n = len(results)
    lines = [f"predicted on {gpu} (vLLM's own `vllm bench serve`, under timewarp"
             + (f"; mean of {n} runs, range in parentheses):" if n > 1 else "):")]
    for key, label, unit in METRICS:
        vs = [r[key] for r in results if isinstance(r.get(key), (int, float))]
        if len(vs) == n:
            spread = f"  ({min(vs):.2f} .. {max(vs):.2f})" if n > 1 else ""
            lines.append(f"  {label:<20} {sum(vs) / n:>10.2f} {unit}{spread}")
    completed = sum(r.get("completed", 0) for r in results)
    failed = sum(r.get("failed", 0) for r in results)
    lines.append(f"  {'requests':<20} {completed:>10} completed, {failed} failed")
    if virtual_ready is not None:
        # not a prediction of the real start-up: compiler subprocesses that do not hold the virtual clock
        # let it run ahead during a cold start (docs/LIMITATIONS.md, "Time to engine ready")
        lines.append(f"  {'engine ready':<20} {virtual_ready:>10.1f} s virtual (not a start-up prediction), "
                     f"{watch.ready_wall or float('nan'):.1f} s wall here")
    predicted = sum(r.get("duration") or 0 for r in results)
    if watch.ready_wall is not None and watch.result_wall is not None and predicted:
        bench_wall = watch.result_wall - watch.ready_wall
        lines.append(f"  {'benchmark speed':<20} {predicted / bench_wall:>10.2f} virtual s per wall s "
                     f"({predicted:.1f} s predicted in {bench_wall:.1f} s)")
    lines.append(f"  {'total wall time':<20} {total_wall:>10.1f} s")
    return "\n".join(lines)


def run_benchmark(spec: Spec, gpu: str, gpu_name: str, launch) -> int:
    """Run the driver under emulation (launch: integrations.launcher.launch) and print the prediction."""
    Path(spec.workdir).mkdir(parents=True, exist_ok=True)
    spec_file = Path(spec.workdir) / "spec.json"
    spec_file.write_text(json.dumps(asdict(spec)))
    # `python -m` puts the working directory first on sys.path: run from a checkout of timewarp, its source
    # folder timewarp/ (no integrations/ in it) would shadow the installed package in the driver and in
    # every vLLM process (whose plugin then fails to load). The driver and its children inherit this.
    os.environ["PYTHONSAFEPATH"] = "1"
    watch = _Watch(spec)
    watch.start()
    t0 = time.monotonic()
    report = Path(spec.workdir) / "report.jsonl"
    report.unlink(missing_ok=True)   # this run's processes only
    rc = launch([sys.executable, "-m", "timewarp.integrations.vllm_bench", "--driver", str(spec_file)], gpu,
                gpu_name=gpu_name, summary=False, report=report)
    total = time.monotonic() - t0
    watch.stop.set()
    watch.join()
    if rc != 0 or not all(f.exists() for f in spec.result_files):
        sys.stderr.write(f"timewarp vllm-bench: failed (status {rc}); logs in {spec.workdir}\n")
        return rc or 1
    results = [json.loads(f.read_text()) for f in spec.result_files]
    try:
        virtual_ready = json.loads(spec.ready_file.read_text())["virtual_ready_s"]
    except (OSError, ValueError, KeyError):
        virtual_ready = None
    print(format_result(results, watch, total, virtual_ready, gpu_name))
    from timewarp.integrations.launcher import gpu_accuracy
    for note in emulator_notes(spec.serve_log) + coverage_notes(report):
        print(f"  note: {note}")
    accuracy = gpu_accuracy(gpu)
    if accuracy:
        print(f"  accuracy on this GPU: {accuracy}")
    print(f"  logs and result JSON: {spec.workdir}")
    return 0


# the share of the GPU time timed by the analytical roofline (nothing measured behind it) above which the
# prediction says so
ROOFLINE_NOTE_SHARE = 0.05


def coverage_notes(report: Path) -> list[str]:
    """A note when much of the run's GPU time was timed by the roofline (kernels never measured: another
    model's Triton kernels, a library's own GEMMs): the metrics are then estimates."""
    from timewarp.integrations.launcher import Report, layer_shares

    try:
        shares = layer_shares(Report(report).records())
    except (OSError, ValueError):
        return []
    roof = shares.get("roofline", 0.0)
    if roof < ROOFLINE_NOTE_SHARE:
        return []
    return [f"{roof:.0%} of the GPU time was timed by the analytical roofline (kernels with no measurement "
            f"behind them): treat the metrics as estimates (report: {report})"]


def emulator_notes(serve_log: Path) -> list[str]:
    """The emulator's own notes in the server's log (`timewarp[pid:tid] note: ...`: where a prediction is an
    estimate, e.g. 8-bit GEMMs without measured rows), each once."""
    try:
        text = serve_log.read_text(errors="replace")
    except OSError:
        return []
    return list(dict.fromkeys(m.group(1) for m in re.finditer(r"timewarp\[\d+:\d+\] note: (.*)", text)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="the driver half of `timewarp vllm-bench` (runs under emulation)")
    ap.add_argument("--driver", required=True, help="spec JSON written by the command")
    a = ap.parse_args(argv)
    return drive(Spec(**json.loads(Path(a.driver).read_text())))


if __name__ == "__main__":
    sys.exit(main())
