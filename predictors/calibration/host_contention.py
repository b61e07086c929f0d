"""How much concurrent CPU-bound processes slow each other on this host (the H200 lease's): the same Python
loop in N processes at once, N = 1 .. 16; per N the median over 3 rounds of the processes' median CPU time
(a loop's CPU time grows when its core's other hardware thread, or the machine's memory system, is busy).
Also the CPU topology (which logical CPUs share a core) and the cgroup's CPU limit.

Why: on the real H200 hosts vLLM's EngineCore took 1.6-2.6x the CPU for the same eager prefill step while
serving (API server and client busy beside it) as offline in one process
(predictors/data/h200/vllm_eager_profile_2026-12-01); contention between busy processes is a candidate.

    python3 predictors/calibration/host_contention.py OUT.json
"""
import json
import os
import subprocess
import sys
from pathlib import Path

LOOP = ("import time\nc = time.thread_time()\nx = 0\nfor i in range(3000000): x += i & 7\n"
        "print(time.thread_time() - c)")


def topology() -> dict:
    cpus = sorted(os.sched_getaffinity(0))
    sib = {}
    for c in cpus:
        p = Path(f"/sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list")
        sib[c] = p.read_text().strip() if p.exists() else "?"
    lim = Path("/sys/fs/cgroup/cpu.max")
    return {"cpus": len(cpus), "siblings": sib, "cpu.max": lim.read_text().strip() if lim.exists() else "?"}


def main() -> None:
    out = {"topology": topology(), "cpu_s": {}}
    for n in (1, 2, 4, 6, 8, 10, 12, 16):
        rounds = []
        for _ in range(3):
            ps = [subprocess.Popen([sys.executable, "-c", LOOP], stdout=subprocess.PIPE, text=True) for _ in range(n)]
            cpu = sorted(float(p.communicate()[0]) for p in ps)
            rounds.append(cpu[len(cpu) // 2])
        out["cpu_s"][n] = sorted(rounds)[1]
        print(n, out["cpu_s"][n], flush=True)
    Path(sys.argv[1]).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
