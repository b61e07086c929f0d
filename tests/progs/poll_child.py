"""A parent that polls a child with sleeps (as `vllm bench` scripts and launchers do) while the child starts
up: imports torch (threads, locks, file reads) and computes for CPU_S seconds. Prints one JSON line: the
child's own virtual time from start to end and the parent's virtual time from spawning to seeing it end."""
import json
import subprocess
import sys
import time

CPU_S = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
child = f"""
import time
t = time.monotonic()
import torch
c = time.process_time()
while time.process_time() - c < {CPU_S}:
    pass
print(time.monotonic() - t, flush=True)
"""
t0 = time.monotonic()
p = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True)
while p.poll() is None:
    time.sleep(0.2)
parent = time.monotonic() - t0
print(json.dumps({"child_s": float(p.stdout.read().strip()), "parent_s": parent}))
