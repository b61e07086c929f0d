"""A reader woken by a message resumes at the time it was written (shim_c/libc/message.c), even when
another process has since gone far ahead.

The driver stops the reader (SIGSTOP) while it waits, writes to it, then starts a process that sleeps
0.5 s: with every other thread idle the run's clock jumps there, and that process wakes the reader
(SIGCONT) at the run's highest time. Without message stamps the reader would resume there too.

    message_stamps.py CHANNEL WAIT [N]    CHANNEL: pipe | unix | tcp; WAIT: poll | epoll | select; N: pipes
                                          written and closed first (more channels than the stamp table holds)
(epoll_wait, stopped and continued, returns EINTR: a signal, which wakes at the run's highest time.)
Prints one JSON line: the write's and the wake-up's virtual times, and the sleeper's.
"""
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time


def reader(fd: int, wait: str, ready: int) -> None:
    os.write(ready, b"r")
    if wait == "poll":
        p = select.poll()
        p.register(fd, select.POLLIN)
        p.poll()
    elif wait == "epoll":
        e = select.epoll()
        e.register(fd, select.EPOLLIN)
        e.poll()
    else:
        select.select([fd], [], [])
    print(f"woke {time.monotonic()!r}", flush=True)


def channel(kind: str):
    """(the reader's end, the writer's end) as descriptors the reader inherits."""
    if kind == "pipe":
        return os.pipe()
    if kind == "unix":
        a, b = socket.socketpair()
        return a.detach(), b.detach()
    srv = socket.create_server(("127.0.0.1", 0))
    c = socket.create_connection(srv.getsockname())
    s, _ = srv.accept()
    srv.close()
    return s.detach(), c.detach()


def main() -> None:
    if sys.argv[1] == "reader":
        reader(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
        return
    if sys.argv[1] == "sleeper":
        time.sleep(0.5)
        print(f"slept {time.monotonic()!r}", flush=True)
        os.kill(int(sys.argv[2]), signal.SIGCONT)
        return
    kind, wait = sys.argv[1], sys.argv[2]
    for _ in range(int(sys.argv[3]) if len(sys.argv) > 3 else 0):   # channels written before: a full table
        a, b = os.pipe()
        os.write(b, b"x")
        os.close(a)
        os.close(b)
    r, w = channel(kind)
    ready_r, ready_w = os.pipe()
    rd = subprocess.Popen([sys.executable, __file__, "reader", str(r), wait, str(ready_w)], pass_fds=[r, ready_w],
                          stdout=subprocess.PIPE, text=True)
    os.read(ready_r, 1)
    time.sleep(0.05)   # the reader is in its wait by now
    os.kill(rd.pid, signal.SIGSTOP)
    wrote = time.monotonic()
    os.write(w, b"x")
    sl = subprocess.Popen([sys.executable, __file__, "sleeper", str(rd.pid)], stdout=subprocess.PIPE, text=True)
    slept = float(sl.communicate()[0].split()[1])
    woke = float(rd.communicate()[0].split()[1])
    print(json.dumps({"wrote": wrote, "woke": woke, "slept": slept}))


if __name__ == "__main__":
    main()
