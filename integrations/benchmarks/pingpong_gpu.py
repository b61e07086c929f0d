"""Two processes exchange timestamped messages over a socket while doing predicted GPU work (the parent) and
sleeping (the child). Prints one line per message: sent and received virtual time, then a summary line
`violations N monotonic_breaks M virtual S wall W`."""
import os, socket, subprocess, sys, time

if len(sys.argv) > 1 and sys.argv[1] == "child":
    s = socket.create_connection(("127.0.0.1", int(sys.argv[2])))
    s.recv(1)                                   # wait for "go": the parent is ready
    for _ in range(20):
        time.sleep(0.05)
        s.sendall(f"{time.time():.9f}\n".encode())
    s.close()
    sys.exit(0)

import torch

srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
child = subprocess.Popen([sys.executable, __file__, "child", str(srv.getsockname()[1])])
conn, _ = srv.accept()
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
conn.sendall(b"g")
f = conn.makefile()
t0, w0 = time.time(), time.perf_counter()
last = time.monotonic()
violations = breaks = 0
for line in f:
    now = time.time()
    sent = float(line)
    violations += now < sent
    print(f"sent {sent - t0:.6f} recv {now - t0:.6f}", flush=True)
    for _ in range(20):
        a @ a
    torch.cuda.synchronize()
    m = time.monotonic()
    breaks += m < last
    last = m
child.wait()
print(f"violations {violations} monotonic_breaks {breaks} virtual {time.time() - t0:.6f} wall {os.times().elapsed:.3f}")
