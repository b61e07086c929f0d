"""Issue 5's robustness check: a long vLLM benchmark keeps every process's memory bounded, and an interrupt
ends every process the run started.

    python integrations/bench/robustness.py [--num-prompts 1000] [--input-len 128] [--output-len 32]
                                            [--concurrency 64] [--parts soak,interrupt] [--logs DIR]

soak: `timewarp vllm-bench --num-prompts N` (vLLM's server and its own benchmark client on one virtual clock)
while this script reads, once a second of real time, the resident memory of every process of the run (the
launcher's descendants). Per process it prints the RSS when the client's main run started (after its
warm-up request), halfway through the main run, at its end, and the peak. A leak grows with the requests served, so the check is the
second half of the client's run: a process that grew by more than GROWTH_MB or GROWTH_SHARE of its size
there fails the check, as does a process of the run still alive after the command returned. (The
defaults, 256 tokens in and 128 out at concurrency 32, make about 4,000 engine steps.)

interrupt: `timewarp run -- vllm serve` until ready, eight long generations in flight, then a signal, twice
on fresh servers: SIGTERM to the launcher alone (a process manager, `kill`), and SIGINT to the launcher's
process group (a terminal's Ctrl-C). Every process of the run (the launcher's descendants, and any process
carrying the run's TIMEWARP_CLOCK, should one have left the tree) must be gone within END_S seconds; the
script prints how long each took, and kills and names any left.

Prints a table per part and exits 1 if a check failed. Needs psutil (a dependency of vLLM).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import psutil

from timewarp.integrations.vllm_bench import EMBEDDED_MODEL as MODEL, _healthy as healthy, free_port

GROWTH_MB = 25.0        # a process may grow this much in the second half of the client's run ...
GROWTH_SHARE = 0.05     # ... or this share of its size, whichever is larger
END_S = 60.0            # real seconds for every process of an interrupted run to end
READY_S = 1800.0        # real seconds for `vllm serve` to become ready (2 cores: about 60-120 s)


def timewarp() -> list[str]:
    exe = shutil.which("timewarp")
    return [exe] if exe else [sys.executable, "-m", "timewarp"]


def label(p: psutil.Process) -> str:
    """What the process is, in a few words (vLLM names its processes with setproctitle)."""
    try:
        cmd = p.cmdline()
    except psutil.Error:
        return "?"
    text = " ".join(cmd)
    if any(Path(a).name == "timewarp" for a in cmd[:2]) or cmd[1:3] == ["-m", "timewarp"]:   # the script or -m
        return "timewarp launcher"
    for key, name in (("bench serve", "vllm bench serve (client)"), ("vllm_bench --driver", "vllm-bench driver"),
                      ("EngineCore", "vLLM EngineCore"), ("multiprocessing.spawn", "vLLM EngineCore"),
                      ("resource_tracker", "multiprocessing resource tracker"), ("APIServer", "vLLM API server"),
                      (" serve ", "vllm serve"), ("coordinator", "timewarp host pace"),
                      ("timewarp", "timewarp launcher")):
        if key in text:
            return name
    return text[:50] or p.name()


def tree(root: psutil.Process) -> list[psutil.Process]:
    try:
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def with_clock(clock: str | None) -> list[psutil.Process]:
    """Every process whose environment carries the run's clock file (a process that left the launcher's tree)."""
    if not clock:
        return []
    found = []
    for p in psutil.process_iter():
        try:
            if p.environ().get("TIMEWARP_CLOCK") == clock:
                found.append(p)
        except psutil.Error:
            continue
    return found


def run_clock(root: psutil.Process) -> str | None:
    for p in tree(root)[1:]:
        try:
            c = p.environ().get("TIMEWARP_CLOCK")
        except psutil.Error:
            continue
        if c:
            return c
    return None


def alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


# ------------------------------------------------------------------------------------------------------ soak
def _main_run_started(bench_log: Path) -> bool:
    try:
        return "Starting main benchmark run" in bench_log.read_text(errors="replace")
    except OSError:
        return False


def soak(a, logs: Path) -> bool:
    cmd = [*timewarp(), "vllm-bench", "--num-prompts", str(a.num_prompts), "--input-len", str(a.input_len),
           "--output-len", str(a.output_len), "--concurrency", str(a.concurrency), "--repeat", "1",
           "--logs", str(logs / "soak")]
    print("soak:", " ".join(cmd), flush=True)
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    root = psutil.Process(proc.pid)
    samples: dict[int, list[tuple[float, float]]] = {}   # pid -> [(t, rss MB)]
    names: dict[int, str] = {}
    seen: dict[int, psutil.Process] = {}
    client: list[float] = []   # real times at which the benchmark client's main run was under way
    clock = None
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.extend(proc.stdout), daemon=True)
    reader.start()
    while proc.poll() is None:
        now = time.monotonic() - t0
        clock = clock or run_clock(root)
        for p in tree(root):
            try:
                rss = p.memory_info().rss / 2**20
            except psutil.Error:
                continue
            seen.setdefault(p.pid, p)
            if p.pid not in names or names[p.pid] in ("?", "timewarp launcher"):
                names[p.pid] = label(p)
            samples.setdefault(p.pid, []).append((now, rss))
            if names[p.pid].endswith("(client)") and _main_run_started(logs / "soak" / "bench.log"):
                client.append(now)
        time.sleep(1.0)
    reader.join(timeout=5)
    wall = time.monotonic() - t0
    print("".join(out[-25:]), flush=True)
    ok = proc.returncode == 0
    if not ok:
        print(f"soak: timewarp vllm-bench exited with status {proc.returncode}")
    if not client:
        print("soak: the benchmark client's main run was never seen")
        return False
    c0, c1 = min(client), max(client)
    mid = (c0 + c1) / 2

    def at(series, t):   # the last sample at or before t (the first one if none)
        before = [r for s, r in series if s <= t]
        return before[-1] if before else series[0][1]
    print(f"\nsoak: {a.num_prompts} requests, the client's main run {c1 - c0:.0f} s of {wall:.0f} s wall; RSS in MB")
    print("| process | pid | main run start | half-way | end | peak | growth in the second half | bound |")
    print("|---|---|---|---|---|---|---|---|")
    for pid, series in samples.items():
        if series[-1][0] < c1 or series[0][0] > c0:   # not alive over the whole main run
            continue
        r0, rm, r1 = at(series, c0), at(series, mid), at(series, c1)
        peak = max(r for _, r in series)
        grow = r1 - rm
        bound = max(GROWTH_MB, GROWTH_SHARE * rm)
        good = grow <= bound
        ok &= good
        print(f"| {names[pid]} | {pid} | {r0:.0f} | {rm:.0f} | {r1:.0f} | {peak:.0f} | {grow:+.1f} | "
              f"{bound:.0f}{'' if good else ' FAILED'} |")
    left = [p for p in list(seen.values()) + with_clock(clock) if alive(p)]
    if left:
        ok = False
        print("soak: still running after the command returned: "
              + ", ".join(f"{label(p)} ({p.pid})" for p in left))
        for p in left:
            p.kill()
    return ok


# ------------------------------------------------------------------------------------------------- interrupt
def generate(port: int, tokens: int) -> None:
    body = json.dumps({"model": str(MODEL), "prompt": "hello " * 100, "max_tokens": tokens,
                       "ignore_eos": True}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", body,
                                 {"Content-Type": "application/json"})
    try:
        urllib.request.urlopen(req, timeout=600).read()
    except OSError:
        pass   # the server went away under it: expected


def interrupt(how: str, logs: Path) -> tuple[bool, str]:
    port = free_port()
    log = open(logs / f"interrupt_{how}.log", "wb")
    env = dict(os.environ, HF_HUB_OFFLINE="1", VLLM_NO_USAGE_STATS="1", PYTHONSAFEPATH="1")
    cmd = [*timewarp(), "run", "--", sys.executable, "-m", "vllm.entrypoints.cli.main", "serve", str(MODEL),
           "--load-format", "dummy", "--port", str(port)]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    root = psutil.Process(proc.pid)
    t0 = time.monotonic()
    while not healthy(port):
        if proc.poll() is not None:
            return False, f"vllm serve exited with status {proc.returncode} before it was ready (log: {log.name})"
        if time.monotonic() - t0 > READY_S:
            os.killpg(proc.pid, signal.SIGKILL)
            return False, f"vllm serve not ready after {READY_S:.0f} s (log: {log.name})"
        time.sleep(1.0)
    ready = time.monotonic() - t0
    for _ in range(8):
        threading.Thread(target=generate, args=(port, 4000), daemon=True).start()
    time.sleep(3.0)   # the generations are running
    clock = run_clock(root)
    procs = {p.pid: p for p in tree(root) + with_clock(clock)}
    names = {pid: label(p) for pid, p in procs.items()}
    t1 = time.monotonic()
    if how == "sigterm-launcher":
        os.kill(proc.pid, signal.SIGTERM)
    else:
        os.killpg(proc.pid, signal.SIGINT)
    while time.monotonic() - t1 < END_S:
        procs.update({p.pid: p for p in with_clock(clock)})   # anything the run still started
        if not any(alive(p) for p in procs.values()):
            break
        time.sleep(0.2)
    took = time.monotonic() - t1
    left = [p for p in procs.values() if alive(p)]
    for p in left:
        p.kill()
    try:
        rc = proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        rc = None
    what = (f"| {how} | {ready:.0f} s | {len(procs)} ({', '.join(sorted(set(names.values())))}) | {took:.1f} s | "
            f"{rc} | {', '.join(f'{names.get(p.pid, label(p))} ({p.pid})' for p in left) or 'none'} |")
    return not left, what


def main() -> int:
    ap = argparse.ArgumentParser(description="memory over a long emulated vLLM run, and what an interrupt ends")
    ap.add_argument("--num-prompts", type=int, default=1000)
    ap.add_argument("--input-len", type=int, default=256)
    ap.add_argument("--output-len", type=int, default=128)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--parts", default="soak,interrupt")
    ap.add_argument("--logs", type=Path, default=None)
    a = ap.parse_args()
    logs = a.logs or Path(tempfile.mkdtemp(prefix="timewarp-robustness-"))
    logs.mkdir(parents=True, exist_ok=True)
    ok = True
    parts = a.parts.split(",")
    if "soak" in parts:
        ok &= soak(a, logs)
    if "interrupt" in parts:
        rows = []
        for how in ("sigterm-launcher", "sigint-group"):
            good, row = interrupt(how, logs)
            ok &= good
            rows.append(row)
        print("\ninterrupt: a signal with eight generations in flight; every process of the run must end")
        print("| signal | ready after | processes | all ended after | launcher status | left (killed) |")
        print("|---|---|---|---|---|---|")
        print("\n".join(rows))
    print(f"\nlogs: {logs}")
    print("robustness: " + ("passed" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
