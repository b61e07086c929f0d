"""How long a blocked thread takes to run again after another thread or process wakes it, on this host (an
H200 lease's): ping-pong round trips with both sides blocking, for the hand-overs vLLM makes between its
processes and threads (a queue between threads, a pipe and a Unix socket between processes, ZMQ where pyzmq
is installed). Per kind: the median round trip and each side's CPU time per round trip; half the round
trip less the CPU is the wake-up's own latency.

Why: on the real H200 (leases o and p, case 1) a request took 520-560 us from the API server's input to the
EngineCore's input thread (three hand-overs: the API server's loop, ZMQ's I/O threads, the input thread) and
93-100 us from that thread's queue to the busy loop; emulated 250-290 and 41 us, where a wake-up costs only
the CPU time of the calls around it.

    python3 predictors/calibration/wake_latency.py OUT.json
WAKE_N: round trips per kind (2000); WAKE_ZMQ=0 leaves ZMQ out.
"""
import json
import os
import queue
import socket
import statistics
import sys
import threading
import time
from pathlib import Path

N = int(os.environ.get("WAKE_N", "2000"))   # round trips per kind and gap


def summary(rtts: list[float], cpu_a: float, cpu_b: float) -> dict:
    rtts.sort()
    return {"rtt_us_median": round(statistics.median(rtts) * 1e6, 2), "rtt_us_p10": round(rtts[len(rtts) // 10] * 1e6, 2),
            "rtt_us_p90": round(rtts[int(len(rtts) * 0.9)] * 1e6, 2),
            "cpu_us_per_rtt": [round(cpu_a / len(rtts) * 1e6, 2), round(cpu_b / len(rtts) * 1e6, 2)]}


def ping(send, recv, gap: float, n: int = N) -> tuple[list[float], float]:
    """n round trips (each after `gap` s of sleep when gap > 0): the round trips' s, and this thread's CPU s"""
    rtts = []
    c = time.thread_time()
    for _ in range(n):
        if gap:
            time.sleep(gap)
        s = time.perf_counter()
        send()
        recv()
        rtts.append(time.perf_counter() - s)
    return rtts, time.thread_time() - c


def threads_queue(gap: float) -> dict:
    """two threads, one queue.Queue each way (vLLM's input thread to its busy loop)"""
    a, b = queue.Queue(), queue.Queue()
    cpu_b = []

    def echo():
        c = time.thread_time()
        for _ in range(N):
            b.put(a.get())
        cpu_b.append(time.thread_time() - c)

    t = threading.Thread(target=echo)
    t.start()
    rtts, cpu_a = ping(lambda: a.put(1), b.get, gap)
    t.join()
    return summary(rtts, cpu_a, cpu_b[0])


def processes_fd(kind: str, gap: float) -> dict:
    """two processes, a pipe pair or a Unix socket pair, blocking reads"""
    if kind == "pipe":
        r1, w1 = os.pipe()
        r2, w2 = os.pipe()
    else:
        s1, s2 = socket.socketpair()
        r1 = w2 = s2.fileno()
        r2 = w1 = s1.fileno()
    pid = os.fork()
    if pid == 0:
        c = time.thread_time()
        for _ in range(N):
            os.read(r1, 1)
            os.write(w2, b"x")
        os.write(w2, str(time.thread_time() - c).encode().ljust(32))
        os._exit(0)
    rtts, cpu_a = ping(lambda: os.write(w1, b"x"), lambda: os.read(r2, 1), gap)
    cpu_b = float(os.read(r2, 32))
    os.waitpid(pid, 0)
    return summary(rtts, cpu_a, cpu_b)


def processes_zmq(gap: float) -> dict | None:
    if os.environ.get("WAKE_ZMQ") == "0":
        return None
    try:
        import zmq
    except ImportError:
        return None
    addr = "ipc:///tmp/wake_latency.ipc"
    pid = os.fork()
    if pid == 0:
        ctx = zmq.Context()
        s = ctx.socket(zmq.PAIR)
        s.connect(addr)
        c = time.thread_time()
        for _ in range(N):
            s.send(s.recv())
        s.send(str(time.thread_time() - c).encode())
        s.close(linger=5000)   # ZMQ's I/O thread sends it: _exit at once lost it, and the parent waited forever
        ctx.term()
        os._exit(0)
    ctx = zmq.Context()
    s = ctx.socket(zmq.PAIR)
    s.bind(addr)
    s.send(b"x")
    s.recv()   # connected
    rtts, cpu_a = ping(lambda: s.send(b"x"), s.recv, gap, N - 1)
    cpu_b = float(s.recv())
    os.waitpid(pid, 0)
    s.close()
    ctx.term()
    return summary(rtts, cpu_a, cpu_b)


def main() -> None:
    out = {"ncpu": os.cpu_count(), "python": sys.version.split()[0]}
    for gap in (0.0, 0.002):   # back to back, and after 2 ms of idling (a core that may have gone to sleep)
        key = f"gap_{gap * 1e3:g}ms"
        out[key] = {"threads_queue": threads_queue(gap), "processes_pipe": processes_fd("pipe", gap),
                    "processes_unix": processes_fd("unix", gap), "processes_zmq": processes_zmq(gap)}
        print(key, json.dumps(out[key]), flush=True)
    Path(sys.argv[1]).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
