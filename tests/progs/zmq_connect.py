"""Reproduction (no test runs it yet): a ZMQ connection's set-up should take the virtual time of a few
hand-overs, not of ZMQ's own timers. A child process connects a PAIR socket over ipc while this process binds
and sends three messages, each echoed back; each prints its virtual time at each step.

Measured (twenty-second session): the first message got through at 30-83 virtual s in five runs (0.7 s of
wall time; 0.05 s without timewarp). The keeper granted the ZMQ I/O threads' timers (30 s, ZMQ's handshake
interval, and 7.4-7.8 s) while no thread ran and no message held the clock, and ZMQ redid handshakes that had
timed out in virtual time; with TIMEWARP_MSG_STAMPS=0 no jump came in three runs (docs/LIMITATIONS.md).

    timewarp run -- python zmq_connect.py
"""
import os
import shutil
import tempfile
import time

import zmq

T0 = time.monotonic()


def say(who: str, what: str) -> None:
    print(f"{who} {time.monotonic() - T0:9.4f} s {what}", flush=True)


def main() -> None:
    folder = tempfile.mkdtemp(prefix="tw_zmq_")
    addr = f"ipc://{folder}/sock"
    pid = os.fork()
    if pid == 0:
        ctx = zmq.Context()
        s = ctx.socket(zmq.PAIR)
        s.connect(addr)
        say("child", "connected")
        for i in range(3):
            s.send(s.recv())
            say("child", f"echoed {i}")
        s.close(linger=5000)   # ZMQ's I/O thread sends the last echo: _exit before it would lose it
        ctx.term()
        os._exit(0)
    ctx = zmq.Context()
    s = ctx.socket(zmq.PAIR)
    s.bind(addr)
    say("parent", "bound")
    for i in range(3):
        s.send(b"x")
        s.recv()
        say("parent", f"round trip {i} done")
    os.waitpid(pid, 0)
    s.close()
    ctx.term()
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
