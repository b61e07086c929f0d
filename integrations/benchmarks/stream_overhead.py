"""What the emulator charges an I/O-heavy Python program beyond its own CPU time.

An asyncio program streams small chunks over many localhost TCP connections (the shape of an API server
streaming tokens to a benchmark client, all in one process). Natively its elapsed time includes the
kernel's network latency, so the reference is its CPU time. Under `timewarp run` at a fixed host speed of
1 its virtual elapsed time should equal that CPU time: every wait is on its own writes, and the emulator's
bookkeeping (keying descriptors, message stamps) is not the program's work. Prints the medians of REPS runs
natively, under timewarp with message stamps, and with stamps off (TIMEWARP_MSG_STAMPS=0).

    python -m timewarp.integrations.benchmarks.stream_overhead [--conns 256] [--chunks 128] [--reps 5]
"""
from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile

import click

PROGRAM = r'''
import asyncio, json, sys, time
N, K = int(sys.argv[1]), int(sys.argv[2])
async def handle(reader, writer):
    await reader.readline()
    for i in range(K):
        writer.write(("data: " + json.dumps({"id": i, "text": "tok"}) + "\n\n").encode())
        await writer.drain()
        if i % 8 == 0:
            await asyncio.sleep(0)
    writer.close()
async def client(port):
    r, w = await asyncio.open_connection("127.0.0.1", port)
    w.write(b"GET\n")
    await w.drain()
    n = 0
    while line := await r.readline():
        if line.startswith(b"data: "):
            json.loads(line[6:])
            n += 1
    return n
async def main():
    srv = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    t0, c0 = time.perf_counter(), time.process_time()
    got = sum(await asyncio.gather(*[client(port) for _ in range(N)]))
    t1, c1 = time.perf_counter(), time.process_time()
    assert got == N * K, got
    print(f"RESULT elapsed_ms={1e3 * (t1 - t0):.1f} cpu_ms={1e3 * (c1 - c0):.1f}")
asyncio.run(main())
'''


def _run(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    m = re.search(r"RESULT elapsed_ms=([\d.]+) cpu_ms=([\d.]+)", out.stdout)
    if not m:
        raise click.ClickException(f"{' '.join(cmd[:3])}... printed no result (rc {out.returncode}):\n{out.stderr[-2000:]}")
    return float(m.group(1)), float(m.group(2))


@click.command()
@click.option("--conns", default=256, show_default=True, help="concurrent connections")
@click.option("--chunks", default=128, show_default=True, help="chunks per connection")
@click.option("--reps", default=5, show_default=True, help="runs of each variant (medians printed)")
def main(conns: int, chunks: int, reps: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        prog = os.path.join(tmp, "stream.py")
        with open(prog, "w") as f:
            f.write(PROGRAM)
        base = dict(os.environ)
        base.pop("TIMEWARP_MSG_STAMPS", None)
        args = [sys.executable, prog, str(conns), str(chunks)]
        emu = [sys.executable, "-m", "timewarp", "run", "--"] + args
        variants = {
            "native": (args, base),
            "timewarp, stamps on": (emu, {**base, "TIMEWARP_HOST_SPEED": "1"}),
            "timewarp, stamps off": (emu, {**base, "TIMEWARP_HOST_SPEED": "1", "TIMEWARP_MSG_STAMPS": "0"}),
        }
        res: dict[str, list[tuple[float, float]]] = {k: [] for k in variants}
        for _ in range(reps):   # interleaved, so that a change in the machine's state hits every variant
            for name, (cmd, env) in variants.items():
                res[name].append(_run(cmd, env))
    native_cpu = statistics.median(c for _, c in res["native"])
    print(f"{conns} connections x {chunks} chunks, medians of {reps} runs")
    print(f"{'variant':<22} {'elapsed ms':>11} {'cpu ms':>9} {'elapsed / native cpu':>21}")
    for name, rows in res.items():
        el = statistics.median(e for e, _ in rows)
        cpu = statistics.median(c for _, c in rows)
        print(f"{name:<22} {el:>11.1f} {cpu:>9.1f} {el / native_cpu:>21.3f}")
    print("(under timewarp, elapsed is virtual and cpu is this machine's real CPU time, the bookkeeping included)")


if __name__ == "__main__":
    main()
