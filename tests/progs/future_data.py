"""A busy reader's non-blocking check at virtual time t does not report data written after t by a writer
that ran ahead in real time (shim_c/libc/message.c, tw_msg_view_*), and reports it once its own
time has passed the write.

The writer computes alone on CPU 0 for 40 ms of virtual time, then writes one byte. The reader computes at
nice 19 on CPU 1, beside a CPU hog the test starts outside the run, in short slices, checking the channel
between them without waiting (poll or epoll with timeout 0): in real time its clock runs far behind the
writer's, so the byte is there long before the reader's time reaches the write.

    future_data.py CHANNEL WAIT      CHANNEL: pipe | unix; WAIT: poll | epoll
Prints one JSON line: the write's virtual time and, per check, [time, saw data].
"""
import json
import os
import socket
import subprocess
import sys
import time

from nonblocking_check import check_for


def spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    x = 0
    while time.monotonic() < end:
        for i in range(200):
            x += i


def writer(fd: int) -> None:
    os.sched_setaffinity(0, {0})
    spin(0.04)
    wrote = time.monotonic()
    os.write(fd, b"x")
    print(json.dumps(wrote), flush=True)
    sys.stdin.read()   # stay until the reader is done: a closed peer reports a hang-up, which is always shown


def reader(fd: int, wait: str) -> None:
    os.sched_setaffinity(0, {1})
    os.nice(19)
    check = check_for(fd, wait)
    checks, x = [], 0
    start = time.monotonic()
    while time.monotonic() - start < 0.1:
        for i in range(300):
            x += i * i
        t = time.monotonic()
        seen = bool(check())
        checks.append([t, seen])
        if seen:
            break
    print(json.dumps(checks), flush=True)


def main() -> None:
    if sys.argv[1] == "writer":
        writer(int(sys.argv[2]))
        return
    if sys.argv[1] == "reader":
        reader(int(sys.argv[2]), sys.argv[3])
        return
    kind, wait = sys.argv[1], sys.argv[2]
    if kind == "pipe":
        r, w = os.pipe()
    else:
        a, b = socket.socketpair()
        r, w = a.detach(), b.detach()
    rd = subprocess.Popen([sys.executable, __file__, "reader", str(r), wait], pass_fds=[r],
                          stdout=subprocess.PIPE, text=True)
    wr = subprocess.Popen([sys.executable, __file__, "writer", str(w)], pass_fds=[w], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True)
    os.close(r)
    os.close(w)
    wrote = json.loads(wr.stdout.readline())
    checks = json.loads(rd.communicate()[0])
    wr.communicate("")
    print(json.dumps({"wrote": wrote, "checks": checks}))


if __name__ == "__main__":
    main()
