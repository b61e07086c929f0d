"""A thread that feeds its process through memory hands over every message by the virtual time it arrived,
however late it runs in real time (shim_c/core/vclock.c, tw_sync_inputs; the pattern of vLLM's EngineCore,
integrations/vllm_plugin/input_clock.py).

A writer (a child process) sleeps 50 ms of virtual time, then sends one message every 5 ms, ROUNDS times,
and reports each send's virtual time. In the reader, a feeder thread waits on the socket (poll), decodes
each message with some Python work and puts it on a TimedQueue. The main thread runs steps: GPU work it
waits for (virtual milliseconds in little real time), Python work holding the GIL, then (SYNC=1) the wait
for its inputs, then a drain of the queue without blocking; it records each drain's virtual time and how
many messages it took.

    feeder_queue.py SYNC [ROUNDS]
Prints one JSON line: the writes' times and, per drain, [time, messages taken].
"""
import json
import os
import select
import socket
import subprocess
import sys
import threading
import time


def writer(fd: int, rounds: int) -> None:
    s = socket.socket(fileno=fd)
    times = []
    time.sleep(0.05)
    for i in range(rounds):
        times.append(time.monotonic())
        s.sendall(json.dumps({"i": i, "pad": "x" * 200}).encode() + b"\n")
        time.sleep(0.005)
    print(json.dumps(times), flush=True)


def feeder(sock: socket.socket, q, become_feeder, work: int = 2000, stamp: bool = False) -> None:
    """Takes each line off sock, decodes it with `work` iterations of Python under the GIL and puts it on q
    (with stamp, its put time as "put"); also run by idle_timers.py."""
    become_feeder()
    p = select.poll()
    p.register(sock.fileno(), select.POLLIN)
    buf = b""
    while True:
        p.poll()
        data = sock.recv(65536)
        if not data:
            return
        buf += data
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            msg = json.loads(line)
            msg["sum"] = sum(i * i for i in range(work))   # decoding work, under the GIL
            if stamp:
                msg["put"] = time.monotonic()
            q.put_nowait(msg)


def main() -> None:
    if sys.argv[1] == "writer":
        writer(int(sys.argv[2]), int(sys.argv[3]))
        return
    import torch
    from timewarp.integrations.thread_clock import TimedQueue, become_feeder, sync_inputs

    sync = sys.argv[1] == "1"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    a, b = socket.socketpair()
    wr = subprocess.Popen([sys.executable, __file__, "writer", str(b.fileno()), str(rounds)],
                          pass_fds=[b.fileno()], stdout=subprocess.PIPE, text=True)
    b.close()
    q = TimedQueue()
    threading.Thread(target=feeder, args=(a, q, become_feeder), daemon=True).start()
    x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    x @ x                              # cuBLAS loads its kernel at the first use (shim_c/core/blas_lazy.c)
    torch.cuda.synchronize()
    drains, got, acc = [], 0, 0
    t_end = time.monotonic() + 0.05 + rounds * 0.005 + 0.05
    while got < rounds and time.monotonic() < t_end:
        y = x @ x                      # a GPU step: ~1.5 virtual ms, waited for
        torch.cuda.synchronize()
        for i in range(100000):        # the step's host work (some virtual ms), holding the GIL
            acc += i * i
        if sync:
            sync_inputs()
        t = time.monotonic()
        n = 0
        while not q.empty():
            q.get_nowait()
            n += 1
        got += n
        drains.append([t, n])
    del y
    times = json.loads(wr.communicate()[0])
    print(json.dumps({"writes": times, "drains": drains, "got": got}))


if __name__ == "__main__":
    main()
