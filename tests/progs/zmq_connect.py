"""A ZMQ connection's set-up takes the virtual time of a few hand-overs, not of ZMQ's own timers.

N times (argv[1], default 1): a child process connects a PAIR socket over ipc while this process binds and
sends three messages, each echoed back. Prints one JSON line: per connection, the virtual seconds from the
bind to the last echo ("setup_s"). The child may connect before the bind: ZMQ then retries after its
reconnect interval (100 ms and a random part), so about 0.2 s is normal.

Without the first look (TIMEWARP_WAIT_FIRST_LOOK=0; shim_c/core/vclock.c, tw_tk_first_look) the first message
got through at 30-83 virtual s in about one run in three (0.7 s of wall time), in most runs beside a CPU hog: a
ZMQ I/O thread about to wait let the keeper settle and jump before it looked at its socket, with the other
side's handshake already in it, and the jump ended the other side's 30 s handshake timer.

    timewarp run -- python zmq_connect.py 5
"""
import json
import os
import shutil
import sys
import tempfile
import time

import zmq


def child(addr: str) -> None:
    ctx = zmq.Context()
    s = ctx.socket(zmq.PAIR)
    s.connect(addr)
    for _ in range(3):
        s.send(s.recv())
    s.close(linger=5000)   # ZMQ's I/O thread sends the last echo: _exit before it would lose it
    ctx.term()
    os._exit(0)


def one_connection() -> float:
    folder = tempfile.mkdtemp(prefix="tw_zmq_")
    addr = f"ipc://{folder}/sock"
    pid = os.fork()
    if pid == 0:
        child(addr)
    ctx = zmq.Context()
    s = ctx.socket(zmq.PAIR)
    t0 = time.monotonic()
    s.bind(addr)
    for _ in range(3):
        s.send(b"x")
        s.recv()
    took = time.monotonic() - t0
    os.waitpid(pid, 0)
    s.close()
    ctx.term()
    shutil.rmtree(folder, ignore_errors=True)
    return took


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    print(json.dumps({"setup_s": [round(one_connection(), 6) for _ in range(n)]}), flush=True)


if __name__ == "__main__":
    main()
