"""What the kernel costs a Python program on this host: user and system CPU per call of the system calls a
serving stack makes (sockets, pipes, polls, clocks), beside the host pace's own probe.

Why: emulated processes spend 17-28% of their CPU in the kernel on the development machine (a Firecracker VM),
where the real H200 hosts' spend 8-11% on the same work (`bench_compare`'s system-time table), and the pace
(coordinator/pace.py) priced kernel CPU like user CPU, from a probe that runs in user mode only (now it has a
price of its own: shim_c/core/vclock.c, TIMEWARP_KERNEL_PRICE). Pricing the
two apart needs the kernel's cost on both machines: run this on the emulation machine and on the target's host,
outside emulation, and compare `sys_ns` per call (and `user_ns`, against the pace probe's `probe_us`).

Each operation runs in a loop for about LOOP_S seconds on the calling thread; the thread's user and system
CPU come from getrusage(RUSAGE_THREAD) (the kernel splits its exact CPU time by tick samples, which over
hundreds of milliseconds is good to a few percent).

    python predictors/calibration/syscall_probe.py [--out FILE] [--loop-s 0.4]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import select
import socket
import sys
import time
from pathlib import Path

LOOP_S = 0.4


def _pace_probe_us() -> float | None:
    """The host pace's probe (coordinator/pace.py), median of 9 timed runs, in us of thread CPU."""
    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root))
    try:
        from coordinator import pace
    except ImportError:
        try:
            from timewarp.coordinator import pace
        except ImportError:
            return None
    finally:
        sys.path.pop(0)
    runs = [pace.timed_probe() for _ in range(9)]   # each warms its probe first
    return sorted(runs)[len(runs) // 2]


def _ops():
    """({name: one call}, a function that closes what the calls use)."""
    ops = {}
    ops["getppid"] = os.getppid
    ops["clock_thread_cputime"] = lambda: time.clock_gettime_ns(time.CLOCK_THREAD_CPUTIME_ID)
    ops["clock_monotonic"] = time.monotonic_ns   # vDSO: no system call; the loop's own cost

    a, b = socket.socketpair()
    small, big = b"x" * 64, b"x" * 16384

    def unix_small():
        a.send(small)
        b.recv(65536)

    def unix_16k():
        a.send(big)
        b.recv(65536)
    ops["unix_send_recv_64"] = unix_small
    ops["unix_send_recv_16k"] = unix_16k

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    c = socket.create_connection(srv.getsockname())
    s, _ = srv.accept()
    for x in (c, s):
        x.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    kb = b"x" * 1024

    def tcp_1k():
        c.send(kb)
        n = 0
        while n < len(kb):
            n += len(s.recv(65536))
    ops["tcp_send_recv_1k"] = tcp_1k

    ep = select.epoll()
    ep.register(b.fileno(), select.EPOLLIN)
    ops["epoll_wait_0"] = lambda: ep.poll(0)
    ops["select_0"] = lambda: select.select([b], [], [], 0)

    r, w = os.pipe()

    def pipe_64():
        os.write(w, small)
        os.read(r, 65536)
    ops["pipe_write_read_64"] = pipe_64
    here = str(Path(__file__))
    ops["stat"] = lambda: os.stat(here)
    ops["sched_yield"] = os.sched_yield

    def close():
        for x in (a, b, c, s, srv):
            x.close()
        ep.close()
        os.close(r)
        os.close(w)
    return ops, close


def _usage() -> tuple[float, float]:
    u = resource.getrusage(resource.RUSAGE_THREAD)
    return u.ru_utime, u.ru_stime


def measure(loop_s: float = LOOP_S) -> dict:
    ops, close = _ops()
    out = {}
    try:
        for name, fn in ops.items():
            for _ in range(200):   # warm
                fn()
            n, batch = 0, 256
            u0, s0 = _usage()
            w0 = time.perf_counter()
            while time.perf_counter() - w0 < loop_s:
                for _ in range(batch):
                    fn()
                n += batch
            w1 = time.perf_counter()
            u1, s1 = _usage()
            out[name] = {"calls": n, "wall_ns": (w1 - w0) / n * 1e9, "user_ns": (u1 - u0) / n * 1e9,
                         "sys_ns": (s1 - s0) / n * 1e9}
    finally:
        close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--loop-s", type=float, default=LOOP_S)
    a = ap.parse_args(argv)
    res = {"host": platform.node(), "kernel": platform.release(), "python": platform.python_version(),
           "cpu": next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                        if ln.startswith("model name")), "?"),
           "ncpu": os.cpu_count(), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "probe_us": _pace_probe_us(), "ops": measure(a.loop_s)}
    print(f"{'operation':24} {'wall ns':>9} {'user ns':>9} {'sys ns':>9}   (pace probe {res['probe_us']} us)")
    for k, v in res["ops"].items():
        print(f"{k:24} {v['wall_ns']:9.0f} {v['user_ns']:9.0f} {v['sys_ns']:9.0f}")
    if a.out:
        a.out.write_text(json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
