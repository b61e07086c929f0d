"""A busy reader's non-blocking checks see every message sent before its time (shim_c/libc/wait.c,
tw_tk_sync_now), whatever the machine's scheduling of the writer.

The writer (a child process) sleeps 50 ms of virtual time, then writes one byte per round to its channel,
ROUNDS times, each after a further 5 ms sleep, and reports each write's virtual time. The reader computes
in short slices and checks the channel between them without waiting (poll or epoll with timeout 0, as an
asyncio loop with work to do does), draining what it finds; it records each check's virtual time and
whether data was there.

    busy_reader.py CHANNEL WAIT [ROUNDS]      CHANNEL: pipe | unix; WAIT: poll | epoll | epoll-oneshot
Prints one JSON line: the writes' times and, per check, [time, saw data].
"""
import json
import os
import socket
import subprocess
import sys
import time

from nonblocking_check import check_for


def writer(fd: int, rounds: int) -> None:
    times = []
    time.sleep(0.05)
    for _ in range(rounds):
        times.append(time.monotonic())
        os.write(fd, b"x")
        time.sleep(0.005)
    print(json.dumps(times), flush=True)


def main() -> None:
    if sys.argv[1] == "writer":
        writer(int(sys.argv[2]), int(sys.argv[3]))
        return
    kind, wait = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    if kind == "pipe":
        r, w = os.pipe()
    else:
        a, b = socket.socketpair()
        r, w = a.detach(), b.detach()
    os.set_blocking(r, False)
    wr = subprocess.Popen([sys.executable, __file__, "writer", str(w), str(rounds)], pass_fds=[w],
                          stdout=subprocess.PIPE, text=True)
    os.close(w)
    check = check_for(r, wait)
    checks, got, x = [], 0, 0
    # the writer's own start-up (a Python process: 20-60 ms of virtual time, more on a loaded machine) comes
    # first; the loop ends as soon as every byte is in, so the slack costs nothing
    t_end = time.monotonic() + 0.05 + rounds * 0.005 + 0.5
    while got < rounds and time.monotonic() < t_end:
        for i in range(300):   # a slice of computing: some tens of microseconds
            x += i * i
        t = time.monotonic()
        seen = bool(check())
        checks.append([t, seen])
        if seen:
            got += len(os.read(r, 64))
    times = json.loads(wr.communicate()[0])
    print(json.dumps({"writes": times, "checks": checks, "got": got}))


if __name__ == "__main__":
    main()
