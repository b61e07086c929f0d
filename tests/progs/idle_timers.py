"""An idle process whose threads that are not Python's wake on their own timers takes a request at the
request's time, not at the timers', once it asks for that (thread_clock.idle_timers_private; shim_c/core/
vclock.c, tw_tk_wake). The pattern of vLLM's idle EngineCore: its gloo process groups' socket loops time out
every few ms while its busy loop waits on its input queue. Without the request (OFF=1), their timeouts move
the process's timeline: messages were taken up to 25 ms after the feeder put them, in 4 of 6 runs of 20
messages; with it, 0.04-0.11 ms (twentieth session). The rule is not on by default: with it in every process,
vLLM's TP=2 start-up hung in 2 of 8 full test-suite runs (twentieth to twenty-second sessions). It also shows
a feeder's post waking the main thread at the post's time (shim_c/libc/semaphore.c): before, beside CPU hogs,
the main thread's wait for the GIL the feeder held could cost it 5 ms switch intervals (twenty-fifth session).

A writer (a child process) sends ROUNDS messages, each after sleeping GAP virtual seconds, each carrying its
send time. In the reader, a gloo process group of one rank starts gloo's socket loop; a feeder thread (its own
clock, as vLLM's input thread) takes each message off the socket, decodes it (about 1 virtual ms of Python) and
puts it on a TimedQueue; the main thread waits on the queue and records, per message, its time once it has
the message less the send time.

    idle_timers.py [ROUNDS] [GAP] [OFF]
Prints one JSON line: {"late_ms": [[taken - put, put - sent], ...]}.
"""
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

from feeder_queue import feeder


def writer(fd: int, rounds: int, gap: float) -> None:
    s = socket.socket(fileno=fd)
    for i in range(rounds):
        time.sleep(gap)
        s.sendall(json.dumps({"i": i, "t": time.monotonic()}).encode() + b"\n")


def main() -> None:
    if sys.argv[1:2] == ["writer"]:
        writer(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))
        return
    import torch.distributed as dist
    from timewarp.integrations.thread_clock import TimedQueue, become_feeder, idle_timers_private
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    gap = float(sys.argv[2]) if len(sys.argv) > 2 else 0.03
    store = tempfile.mkdtemp(prefix="tw_gloo_")
    dist.init_process_group("gloo", init_method=f"file://{store}/store", rank=0, world_size=1)
    if sys.argv[3:4] != ["1"]:
        idle_timers_private()
    a, b = socket.socketpair()
    wr = subprocess.Popen([sys.executable, __file__, "writer", str(b.fileno()), str(rounds), str(gap)],
                          pass_fds=[b.fileno()])
    b.close()
    q = TimedQueue()
    threading.Thread(target=feeder, args=(a, q, become_feeder, 20000, True), daemon=True).start()  # ~1 virtual ms each
    late = []
    for _ in range(rounds):
        msg = q.get()
        late.append([(time.monotonic() - msg["put"]) * 1e3, (msg["put"] - msg["t"]) * 1e3])
    wr.wait()
    dist.destroy_process_group()
    shutil.rmtree(store, ignore_errors=True)
    print(json.dumps({"late_ms": late}))


if __name__ == "__main__":
    main()
