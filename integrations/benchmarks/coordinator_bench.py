"""Benchmark of the coordinator (issue 4, acceptance 2 and 3): a two-process run (socket messages, predicted
GPU work, sleeps; integrations/benchmarks/pingpong_gpu.py) under `timewarp run`, alone and beside a process
that burns CPU. Prints its virtual duration, wall time and their ratio for each, and the difference.

    python -m timewarp.integrations.benchmarks.coordinator_bench
"""
import multiprocessing as mp
import re
import subprocess
import sys
import time
from pathlib import Path

PROG = Path(__file__).with_name("pingpong_gpu.py")


def burn(stop):
    while not stop.is_set():
        sum(i * i for i in range(10000))


def once():
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "timewarp.integrations.cli", "run", "--", sys.executable, str(PROG)],
                       capture_output=True, text=True, timeout=600)
    wall = time.monotonic() - t0
    m = re.search(r"violations (\d+) monotonic_breaks (\d+) virtual ([0-9.]+)", r.stdout)
    if r.returncode or not m:
        raise SystemExit(f"run failed: {r.stderr[-2000:]}")
    return float(m.group(3)), wall, int(m.group(1))


def main():
    rows = []
    for label, hog in (("alone", 0), ("beside 2 CPU burners", 2)):
        stop = mp.Event()
        burners = [mp.Process(target=burn, args=(stop,)) for _ in range(hog)]
        for b in burners:
            b.start()
        try:
            virt, wall, viol = once()
        finally:
            stop.set()
            for b in burners:
                b.join()
        rows.append((label, virt, wall, viol))
        print(f"{label:22s} virtual {virt:8.4f} s  wall {wall:7.2f} s  virtual/wall {virt / wall:6.2f}  "
              f"causality violations {viol}")
    a, b = rows[0][1], rows[1][1]
    print(f"virtual duration difference with CPU burners: {100 * (b - a) / a:+.2f}%")


if __name__ == "__main__":
    main()
