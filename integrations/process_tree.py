"""The processes a `timewarp run` started, found and ended (issue 5: an interrupt ends every process of the run).

Why: the launcher holds the run's coordinator, so a process of the run that outlives it waits on a dead
clock. Two ways one could: (1) the program ignores the signal the launcher forwards, or hangs on after it:
`vllm serve` given SIGTERM with requests in flight kills its engine and then waits, without end, for its
clients' connections to close (uvicorn's "Waiting for connections to close"); (2) the program exits and
leaves children behind, which the kernel gives to init. The launcher therefore makes itself the run's child
subreaper (orphans are given to it, not to init), kills the whole tree when the program has not ended
STOP_GRACE_S after a signal, and ends whatever the program left behind once it has exited.
"""
from __future__ import annotations

import ctypes
import os
import signal
import time

PR_SET_CHILD_SUBREAPER = 36   # <linux/prctl.h>
STOP_GRACE_S = 30.0           # real seconds a signalled program has to end before its processes are killed
LEFTOVER_GRACE_S = 5.0        # real seconds a process left behind has between SIGTERM and SIGKILL
# real seconds a process the program left has to end by itself before it is signalled: Python's multiprocessing
# resource tracker (vLLM's and torch's spawned workers start one) outlives its parent by a few milliseconds,
# until it reads the end of its pipe and cleans up (ending it then was harmless, but the run reported it as left
# running after every vLLM benchmark)
LEFTOVER_SETTLE_S = 1.0


def become_subreaper() -> bool:
    """Orphans of this process's descendants are re-parented to it instead of init (Linux 3.4 and later)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process (from /proc/PID/stat; a process gone meanwhile is skipped)."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after the last ')'
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 1:
            out[int(name)] = int(fields[1])
    return out


def descendants(pid: int) -> list[int]:
    """Every living descendant of pid (children first), pid itself excluded."""
    children: dict[int, list[int]] = {}
    for p, pp in _parents().items():
        children.setdefault(pp, []).append(p)
    found, todo = [], list(children.get(pid, ()))
    while todo:
        p = todo.pop(0)
        found.append(p)
        todo.extend(children.get(p, ()))
    return found


def _signal(pids: list[int], sig: int) -> None:
    for p in pids:
        try:
            os.kill(p, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _reap(pids: list[int]) -> None:
    """Collect the exit status of those of pids that are our children (orphans given to us), so none stays a
    zombie; the others are not ours to wait for."""
    for p in pids:
        try:
            os.waitpid(p, os.WNOHANG)
        except ChildProcessError:
            pass


def kill_tree(pid: int) -> None:
    """SIGKILL pid and every descendant of it, stopped first so that none can start another meanwhile."""
    tree = [pid, *descendants(pid)]
    _signal(tree, signal.SIGSTOP)
    tree += [p for p in descendants(pid) if p not in tree]
    _signal(tree, signal.SIGKILL)


def end_leftovers(keep: set[int], grace_s: float = LEFTOVER_GRACE_S,
                  settle_s: float = LEFTOVER_SETTLE_S) -> list[int]:
    """End every descendant of this process not in keep (the coordinator's own) that has not ended by itself
    within settle_s: SIGTERM, then SIGKILL to whatever is still there after grace_s. Returns the pids it
    had to signal."""
    me = os.getpid()
    left = [p for p in descendants(me) if p not in keep]
    deadline = time.monotonic() + settle_s
    while left and time.monotonic() < deadline:
        time.sleep(0.02)
        _reap(left)
        left = [p for p in descendants(me) if p not in keep]
    if not left:
        return []
    _signal(left, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        _reap(left)
        if not [p for p in descendants(me) if p in left]:
            return left
        time.sleep(0.05)
    still = [p for p in descendants(me) if p not in keep]
    _signal(still, signal.SIGKILL)
    time.sleep(0.05)
    _reap(still)
    return left
