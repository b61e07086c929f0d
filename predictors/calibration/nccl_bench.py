"""NCCL collective and point-to-point timings on a real multi-GPU machine (written for 2 x H200), for calibrating
the communication model of timewarp's coordinator and the link values of integrations/cluster.py.

Standalone: needs only torch (written for Python 3.12, torch 2.11.0+cu130, NCCL 2.28.9); it does not import
timewarp.

Run on the GPU machine (spawns one process per GPU itself; the recommended way):
    python3 nccl_bench.py --out DIR [--nproc 2]
or under torchrun (each rank is a torchrun process; rank 0 merges the results; no restart after a crash):
    torchrun --nproc-per-node 2 nccl_bench.py --out DIR
Check the plumbing on a machine without GPUs (gloo on the CPU, small sizes):
    python3 nccl_bench.py --out DIR --nproc 2 --backend gloo --device cpu --max-exp 16 \\
        --mlp-hidden 256 --mlp-inter 512 --mlp-tokens 1,16

Measured, for every message size 2^min-exp .. 2^max-exp bytes (default 2^10 .. 2^30, bf16 tensors):
    all_reduce, all_gather_into_tensor, reduce_scatter_tensor, broadcast (from rank 0),
    send_recv (rank 0 -> rank 1, one direction; other ranks idle),
    sendrecv_bidir (batch_isend_irecv: each rank sends to rank+1 and receives from rank-1; with 2 ranks both
    directions at once). `bytes` follows nccl-tests: the size of the larger buffer (all_gather's output,
    reduce_scatter's input); the per-direction size for point-to-point.
Two timings of each, in microseconds per operation, on every rank:
    event_*   one operation between CUDA events on the current stream, after a barrier and a device
              synchronize; median, min and p90 over `iters` repetitions. Includes waiting for the slower rank.
    loop_us   `loop_iters` operations queued back to back between two events, divided by their number (median
              of 3 such loops, each about --loop-target-ms long): the steady state, comparable with nccl-tests.
              For small messages this is bound by the host's cost of issuing each call from Python (~20-50 us).
    graph_us  `graph_iters` operations captured in one CUDA graph, replayed between two events (median of 3
              replays), per op: back to back on the device with no host cost, i.e. the device-side time of the
              collective (NCCL's own latency floor for small messages). CUDA only; --no-graph turns it off.
algbw_gbps_loop / busbw_gbps_loop are derived from loop_us with nccl-tests' factors (GB/s = 1e9 bytes/s).
Host cost of issuing one all_reduce (perf_counter around the call, no synchronize), for 1 KiB and 1 MiB.
A tensor-parallel MLP step (column-parallel linear -> silu -> row-parallel linear -> all_reduce; hidden 4096,
intermediate 14336 split over the ranks, bf16, 1/16/128/512/2048 tokens): the whole step, the compute alone
and the all_reduce alone, for checking the emulator end to end.
On the CPU (--device cpu) the host clock replaces CUDA events.

Writes into --out:
    collectives.csv  op,bytes,rank,nranks,event_median_us,event_min_us,event_p90_us,loop_us,iters,
                     loop_iters,algbw_gbps_loop,busbw_gbps_loop,graph_us,graph_iters,note
                     (note: why a row has no numbers, or what part failed)
    host.csv         op,bytes,rank,nranks,host_median_us,host_min_us,host_p90_us,iters,note
    mlp.csv          tokens,rank,nranks,hidden,intermediate,step_median_us,step_min_us,step_p90_us,step_loop_us,
                     compute_median_us,allreduce_median_us,step_graph_us,iters,note
    provenance.json  versions (torch, NCCL, CUDA, driver), GPU names, nvidia-smi (GPUs, clocks, topology,
                     NVLink), date, command line, NCCL environment, arguments, errors, timings, logs
    parts/           each rank's rows, written as it goes (a run cut short still leaves data)
    nccl_debug.*.log NCCL's INFO log of initialisation and graph search (unless NCCL_DEBUG is set or --no-nccl-debug)

Robustness: every measurement is wrapped. A failure that happens on every rank (an op the backend lacks, out of
memory) is recorded in its row's note and the ranks go on (they agree with a tiny all_reduce before each
measurement whether to run it). A failure on one rank inside a collective leaves the communicator unusable: the
rank dies or the others hang; the parent then notices (a dead rank, or no progress for --stall seconds), stops
the workers, records the measurement as failed and starts fresh workers that continue after it (at most
--max-restarts times). A time budget (--budget) skips what is left of the collective sweep when it runs long;
the parent stops everything at --deadline and still merges what was measured.
Runtime on the 2 x H200 machine (2026-11-30): 32 s in all (start-up 5 s, host costs and sweep 18 s, MLP 2 s,
nvidia-smi and merging 6 s); --budget and --deadline bound it at 4 minutes whatever happens.
"""
from __future__ import annotations

import argparse
import csv
import datetime
import json
import math
import os
import platform
import shlex
import socket
import statistics
import subprocess
import sys
import time
import traceback

T0 = time.perf_counter()
OPS = ["all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor", "broadcast", "send_recv", "sendrecv_bidir"]
COLL_FIELDS = ["op", "bytes", "rank", "nranks", "event_median_us", "event_min_us", "event_p90_us", "loop_us", "iters",
               "loop_iters", "algbw_gbps_loop", "busbw_gbps_loop", "graph_us", "graph_iters", "note"]
HOST_FIELDS = ["op", "bytes", "rank", "nranks", "host_median_us", "host_min_us", "host_p90_us", "iters", "note"]
MLP_FIELDS = ["tokens", "rank", "nranks", "hidden", "intermediate", "step_median_us", "step_min_us", "step_p90_us",
              "step_loop_us", "compute_median_us", "allreduce_median_us", "step_graph_us", "iters", "note"]
HOST_SIZES = (1 << 10, 1 << 20)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="See the module docstring for what is measured and written.")
    p.add_argument("--out", required=True, help="output directory (created)")
    p.add_argument("--nproc", type=int, default=None,
                   help="processes (GPUs) to spawn; default: every visible GPU (2 on the H200 pair), 2 on the CPU. "
                        "Ignored under torchrun")
    p.add_argument("--backend", choices=["nccl", "gloo"], default="nccl")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--dtype", choices=["bfloat16", "float16", "float32"], default="bfloat16")
    p.add_argument("--min-exp", type=int, default=10, help="smallest message 2^N bytes (default 10)")
    p.add_argument("--max-exp", type=int, default=30, help="largest message 2^N bytes (default 30)")
    p.add_argument("--ops", default=",".join(OPS), help=f"comma-separated subset of {','.join(OPS)}")
    p.add_argument("--iters-scale", type=float, default=1.0, help="multiply every iteration count (min 1 each)")
    p.add_argument("--loop-target-ms", type=float, default=20.0,
                   help="length of one back-to-back loop (its op count is chosen from the single-op time)")
    p.add_argument("--budget", type=float, default=150.0,
                   help="seconds after start when the collective sweep stops (the MLP still runs)")
    p.add_argument("--deadline", type=float, default=230.0,
                   help="seconds after start when the parent stops the workers (results so far are kept)")
    p.add_argument("--stall", type=float, default=45.0,
                   help="seconds without progress after which the parent declares the workers hung and restarts them")
    p.add_argument("--init-timeout", type=float, default=90.0, help="seconds allowed for the workers' start-up")
    p.add_argument("--max-restarts", type=int, default=4)
    p.add_argument("--mlp-hidden", type=int, default=4096)
    p.add_argument("--mlp-inter", type=int, default=14336, help="full intermediate size (split over the ranks)")
    p.add_argument("--mlp-tokens", default="1,16,128,512,2048")
    p.add_argument("--no-mlp", action="store_true")
    p.add_argument("--no-graph", action="store_true", help="skip the CUDA-graph timing (graph_us)")
    p.add_argument("--no-nccl-debug", action="store_true",
                   help="do not set NCCL_DEBUG=INFO (subsystems INIT,GRAPH,ENV) with a log file in --out")
    a = p.parse_args(argv)
    a.ops = a.ops.split(",") if isinstance(a.ops, str) else a.ops
    bad = [o for o in a.ops if o not in OPS]
    if bad:
        p.error(f"--ops: unknown {', '.join(bad)}; choose from {', '.join(OPS)}")
    if not 0 <= a.min_exp <= a.max_exp <= 34:
        p.error("--min-exp/--max-exp: need 0 <= min <= max <= 34")
    if a.backend == "nccl" and a.device != "cuda":
        p.error("--backend nccl needs --device cuda (use --backend gloo --device cpu without a GPU)")
    if a.nproc is not None and a.nproc < 1:
        p.error("--nproc must be >= 1")
    try:
        a.mlp_tokens = [int(t) for t in a.mlp_tokens.split(",") if t]
    except ValueError:
        p.error("--mlp-tokens: comma-separated integers")
    if any(t < 1 for t in a.mlp_tokens) or a.mlp_hidden < 1 or a.mlp_inter < 1:
        p.error("--mlp-*: positive sizes")
    return a


def work_items(args):
    """Every measurement, in order, as a key: host:<bytes>, coll:<op>:<bytes>, mlp:<tokens>."""
    items = [f"host:{b}" for b in HOST_SIZES]
    items += [f"coll:{op}:{1 << e}" for op in args.ops for e in range(args.min_exp, args.max_exp + 1)]
    if not args.no_mlp:
        items += [f"mlp:{t}" for t in args.mlp_tokens]
    return items


# ------------------------------------------------------------------------------------------------ small helpers
def stats(xs):
    xs = sorted(xs)
    if not xs:
        return math.nan, math.nan, math.nan
    p90 = xs[min(len(xs) - 1, max(0, math.ceil(0.9 * len(xs)) - 1))]
    return statistics.median(xs), xs[0], p90


def r3(x):
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), 3)


def iters_for(nbytes, scale):
    """(warm-up, timed single ops) by message size."""
    if nbytes <= 1 << 20:
        w, n = 20, 200
    elif nbytes <= 1 << 26:
        w, n = 10, 100
    else:
        w, n = 3, 30
    return max(1, int(w * scale)), max(1, int(n * scale))


def bus_factor(op, n):
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op in ("all_gather_into_tensor", "reduce_scatter_tensor"):
        return (n - 1) / n
    return 1.0


class Skip(Exception):
    """A measurement that does not apply (say, point-to-point with one rank)."""


class CsvSink:
    """Rows appended to a CSV file and flushed at once (a later attempt appends to the same file)."""

    def __init__(self, path, fields):
        new = not os.path.exists(path) or os.path.getsize(path) == 0
        self.f = open(path, "a", newline="")
        self.w = csv.DictWriter(self.f, fieldnames=fields)
        if new:
            self.w.writeheader()
        self.f.flush()

    def row(self, d):
        self.w.writerow(d)
        self.f.flush()


# ------------------------------------------------------------------------------------------------ the worker
class Worker:
    def __init__(self, args, rank, world, local_rank, attempt, t_start):
        import torch
        import torch.distributed as dist
        self.torch, self.dist, self.args = torch, dist, args
        self.rank, self.world, self.local, self.attempt, self.t_start = rank, world, local_rank, attempt, t_start
        self.cuda = args.device == "cuda"
        self.dtype = getattr(torch, args.dtype)
        self.esize = torch.empty((), dtype=self.dtype).element_size()
        self.dev = torch.device("cuda", local_rank) if self.cuda else torch.device("cpu")
        self.errors, self.log_lines, self.timings = [], [], {}
        self.budget_spent = False
        self.mlp_weights = None
        self.facts_d = {}
        parts = os.path.join(args.out, "parts")
        os.makedirs(parts, exist_ok=True)
        self.coll = CsvSink(os.path.join(parts, f"rank{rank}_collectives.csv"), COLL_FIELDS)
        self.host = CsvSink(os.path.join(parts, f"rank{rank}_host.csv"), HOST_FIELDS)
        self.mlp = CsvSink(os.path.join(parts, f"rank{rank}_mlp.csv"), MLP_FIELDS)
        self.meta_path = os.path.join(parts, f"rank{rank}_attempt{attempt}_meta.json")
        self.progress_f = open(os.path.join(parts, f"rank{rank}_progress.txt"), "a")

    # -- logging and bookkeeping
    def log(self, msg, all_ranks=False):
        line = f"[{time.time() - self.t_start:7.1f}s] rank {self.rank}: {msg}"
        self.log_lines.append(line)
        if self.rank == 0 or all_ranks:
            print(line, flush=True)

    def error(self, what, exc):
        msg = f"{type(exc).__name__}: {exc}".strip()[:500]
        self.errors.append({"what": what, "error": msg, "traceback": traceback.format_exc()[-3000:]})
        self.log(f"ERROR in {what}: {msg}", all_ranks=True)
        try:
            self.write_meta()         # at once: the process may not live to write it later
        except OSError:
            pass
        return msg

    def write_meta(self, extra=None):
        meta = {"rank": self.rank, "nranks": self.world, "local_rank": self.local, "attempt": self.attempt,
                "errors": self.errors, "timings_s": self.timings, "log": self.log_lines, "facts": self.facts_d}
        meta.update(extra or {})
        with open(self.meta_path + ".tmp", "w") as f:
            json.dump(meta, f, indent=1, default=str)
        os.replace(self.meta_path + ".tmp", self.meta_path)

    def progress(self, what, key):
        self.progress_f.write(f"{what} {key} {self.attempt} {time.time():.3f}\n")
        self.progress_f.flush()

    def inject(self, stage, what):
        """Test hook: NCCL_BENCH_INJECT=stage@item@rank[@attempt][,...] raises there (stage setup or measure), or
        exits the process (stage crash) or sleeps for an hour (stage hang) at the item's start. Items: host:1024, coll:all_reduce:4096, mlp:16."""
        for spec in filter(None, os.environ.get("NCCL_BENCH_INJECT", "").split(",")):
            f = spec.split("@")
            if len(f) >= 3 and f[0] in (stage, "crash", "hang") and f[1] == what and f[2] == str(self.rank) \
                    and (len(f) < 4 or f[3] == str(self.attempt)):
                if f[0] == "crash":
                    os._exit(3)
                if f[0] == "hang":
                    time.sleep(3600)
                raise RuntimeError(f"injected failure ({spec})")

    # -- primitives
    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize(self.dev)

    def barrier(self):
        if self.cuda and self.args.backend == "nccl":
            self.dist.barrier(device_ids=[self.local])
        else:
            self.dist.barrier()
        self.sync()

    def agree(self, ok=True):
        """True when every rank says ok (one tiny all_reduce)."""
        t = self.torch.tensor([0 if ok else 1], dtype=self.torch.int32, device=self.dev)
        self.dist.all_reduce(t, op=self.dist.ReduceOp.MAX)
        return int(t.item()) == 0

    def time_once(self, fn):
        """Microseconds of one fn() call: CUDA events on the current stream, or the host clock on the CPU."""
        if self.cuda:
            s = self.torch.cuda.Event(enable_timing=True)
            e = self.torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            e.synchronize()
            return s.elapsed_time(e) * 1e3
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e6

    def time_loop(self, fn, n):
        def many():
            for _ in range(n):
                fn()
        return self.time_once(many) / n

    def measure(self, fn, warm, iters, loop=True):
        """(single-op times in µs, loop µs per op or None, loop length, (graph µs per op, graph length, note))."""
        for _ in range(warm):
            fn()
        self.sync()
        singles = []
        for _ in range(iters):
            self.barrier()
            singles.append(self.time_once(fn))
        if not loop:
            return singles, None, 0, (None, 0, "")
        med = statistics.median(singles)
        # Loop length from the single-op median, the same on all ranks (the largest of their choices).
        want = max(5, min(500, int(self.args.loop_target_ms * 1e3 / max(med, 1.0))))
        t = self.torch.tensor([want], dtype=self.torch.int64, device=self.dev)
        self.dist.all_reduce(t, op=self.dist.ReduceOp.MAX)
        n = int(t.item())
        loops = []
        for _ in range(3):
            self.barrier()
            loops.append(self.time_loop(fn, n))
        return singles, statistics.median(loops), n, self.graph_time(fn, min(n, 100))

    def graph_time(self, fn, k):
        """(µs per op of k ops captured in one CUDA graph and replayed, k, note); (None, 0, note) when not done.
        Capture runs no collective; the ranks agree before they replay, so a failed capture is symmetric."""
        if not self.cuda or self.args.no_graph:
            return None, 0, ""
        torch = self.torch
        g, note = None, ""
        try:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                fn()
            torch.cuda.current_stream().wait_stream(side)
            self.sync()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for _ in range(k):
                    fn()
            self.sync()
        except Exception as e:  # noqa: BLE001
            g = None
            note = "graph capture failed: " + self.error("graph capture", e)[:200]
        if not self.agree(g is not None):
            return None, 0, note or "graph capture failed on another rank"
        try:
            g.replay()
            self.sync()
            times = []
            for _ in range(3):
                self.barrier()
                times.append(self.time_once(g.replay) / k)
            return statistics.median(times), k, ""
        finally:
            del g

    def _free(self):
        if self.cuda:
            self.torch.cuda.empty_cache()

    def guarded(self, what, setup, run):
        """setup() -> state, or raises (Skip: the measurement does not apply); run(state) -> result, or raises.
        The ranks agree after each step, so all of them go on or none. Returns (result or None, note)."""
        state, note = None, ""
        try:
            self.inject("setup", what)
            state = setup()
        except Skip as e:
            note = f"skipped: {e}"
        except Exception as e:  # noqa: BLE001 - recorded, the run goes on
            note = "error (setup): " + self.error(f"{what} setup", e)
        if not self.agree(state is not None):
            state = None
            self._free()
            return None, note or "skipped: another rank failed to set up"
        res = None
        try:
            self.inject("measure", what)
            res = run(state)
        except Exception as e:  # noqa: BLE001
            note = "error: " + self.error(what, e)
        state = None
        self._free()
        if not self.agree(res is not None):
            return None, note or "skipped: another rank failed"
        return res, note

    # -- the collective sweep
    def make_op(self, op, nbytes):
        """(callable, actual bytes); raises Skip when this op does not apply."""
        torch, dist, n, r = self.torch, self.dist, self.world, self.rank
        numel = max(n, nbytes // self.esize)
        numel -= numel % n
        actual = numel * self.esize

        def buf(k):
            return torch.ones(k, dtype=self.dtype, device=self.dev)

        if op == "all_reduce":
            x = buf(numel)
            return (lambda: dist.all_reduce(x)), actual
        if op == "all_gather_into_tensor":
            out, inp = buf(numel), buf(numel // n)
            return (lambda: dist.all_gather_into_tensor(out, inp)), actual
        if op == "reduce_scatter_tensor":
            out, inp = buf(numel // n), buf(numel)
            return (lambda: dist.reduce_scatter_tensor(out, inp)), actual
        if op == "broadcast":
            x = buf(numel)
            return (lambda: dist.broadcast(x, src=0)), actual
        if n < 2:
            raise Skip("needs 2 ranks")
        if op == "send_recv":
            x = buf(numel)
            if r == 0:
                return (lambda: dist.send(x, dst=1)), actual
            if r == 1:
                return (lambda: dist.recv(x, src=0)), actual
            return (lambda: None), actual          # an idle rank keeps the barriers company
        if op == "sendrecv_bidir":
            s, d = buf(numel), buf(numel)
            nxt, prv = (r + 1) % n, (r - 1) % n

            def bidir():
                ops = [dist.P2POp(dist.isend, s, nxt), dist.P2POp(dist.irecv, d, prv)]
                for req in dist.batch_isend_irecv(ops):
                    req.wait()
            return bidir, actual
        raise ValueError(op)

    def coll_item(self, op, nbytes):
        args = self.args
        base = {"op": op, "bytes": nbytes, "rank": self.rank, "nranks": self.world}
        over = time.time() - self.t_start > args.budget
        if self.budget_spent or not self.agree(not over):
            if not self.budget_spent:
                self.log(f"time budget ({args.budget:.0f} s) spent: the rest of the sweep is skipped")
            self.budget_spent = True
            self.coll.row({**base, "note": "skipped: time budget"})
            return
        warm, iters = iters_for(nbytes, args.iters_scale)
        actual = {}

        def setup():
            fn, a = self.make_op(op, nbytes)
            actual["bytes"] = a
            return fn

        res, note = self.guarded(f"coll:{op}:{nbytes}", setup, lambda fn: self.measure(fn, warm, iters))
        base["bytes"] = actual.get("bytes", nbytes)
        if res is None:
            self.coll.row({**base, "note": note})
            return
        singles, loop_us, n_loop, (graph_us, n_graph, gnote) = res
        note = "; ".join(x for x in (note, gnote) if x)
        med, mn, p90 = stats(singles)
        algbw = base["bytes"] / (loop_us * 1e-6) / 1e9 if loop_us > 0 else math.nan
        busbw = algbw * bus_factor(op, self.world)
        self.coll.row({**base, "event_median_us": r3(med), "event_min_us": r3(mn), "event_p90_us": r3(p90),
                       "loop_us": r3(loop_us), "iters": len(singles), "loop_iters": n_loop,
                       "algbw_gbps_loop": r3(algbw), "busbw_gbps_loop": r3(busbw), "graph_us": r3(graph_us),
                       "graph_iters": n_graph or "", "note": note})
        if nbytes in (1 << 10, 1 << 20, 1 << 24, 1 << 27) or nbytes == 1 << args.max_exp:
            gtxt = f"  graph {graph_us:9.1f} us" if graph_us is not None else ""
            self.log(f"{op:23s} {nbytes:>11d} B: event median {med:9.1f} us  loop {loop_us:9.1f} us{gtxt}  "
                     f"busbw(loop) {busbw:7.1f} GB/s")

    # -- host cost of issuing an all_reduce
    def host_item(self, nbytes):
        torch, dist = self.torch, self.dist
        base = {"op": "all_reduce", "bytes": nbytes, "rank": self.rank, "nranks": self.world}

        def setup():
            return torch.ones(max(1, nbytes // self.esize), dtype=self.dtype, device=self.dev)

        def run(x):
            for _ in range(20):
                dist.all_reduce(x)
            self.barrier()
            xs = []
            for i in range(max(10, int(300 * self.args.iters_scale))):
                if i % 50 == 0:           # keep the queue (NCCL's and the GPU's) short
                    self.barrier()
                t0 = time.perf_counter()
                dist.all_reduce(x)
                xs.append((time.perf_counter() - t0) * 1e6)
            self.sync()
            return xs

        xs, note = self.guarded(f"host:{nbytes}", setup, run)
        if xs is None:
            self.host.row({**base, "note": note})
            return
        med, mn, p90 = stats(xs)
        self.host.row({**base, "host_median_us": r3(med), "host_min_us": r3(mn), "host_p90_us": r3(p90),
                       "iters": len(xs), "note": note})
        self.log(f"host cost of issuing all_reduce({nbytes} B): median {med:.1f} us")

    # -- tensor-parallel MLP step
    def mlp_item(self, tokens):
        torch, dist, a = self.torch, self.dist, self.args
        F = torch.nn.functional
        n = self.world
        inter = a.mlp_inter // n
        base = {"tokens": tokens, "rank": self.rank, "nranks": n, "hidden": a.mlp_hidden,
                "intermediate": a.mlp_inter}

        def setup():
            if self.mlp_weights is None:
                g = torch.Generator(device=self.dev).manual_seed(1234 + self.rank)
                w1 = (torch.randn(inter, a.mlp_hidden, generator=g, device=self.dev) * 0.02).to(self.dtype)  # column
                w2 = (torch.randn(a.mlp_hidden, inter, generator=g, device=self.dev) * 0.02).to(self.dtype)  # row
                self.mlp_weights = (w1, w2)
            return torch.randn(tokens, a.mlp_hidden, device=self.dev).to(self.dtype)

        def run(x):
            w1, w2 = self.mlp_weights

            def compute():
                return F.linear(F.silu(F.linear(x, w1)), w2)

            y = compute()

            def allreduce():
                dist.all_reduce(y)

            def step():
                dist.all_reduce(compute())

            warm, iters = 5, max(1, int(100 * a.iters_scale))
            s_single, s_loop, _, s_graph = self.measure(step, warm, iters)
            c_single, _, _, _ = self.measure(compute, warm, iters, loop=False)
            r_single, _, _, _ = self.measure(allreduce, warm, iters, loop=False)
            return s_single, s_loop, c_single, r_single, s_graph

        res, note = self.guarded(f"mlp:{tokens}", setup, run)
        if res is None:
            self.mlp.row({**base, "note": note})
            return
        s_single, s_loop, c_single, r_single, (g_us, _, gnote) = res
        note = "; ".join(x for x in (note, gnote) if x)
        med, mn, p90 = stats(s_single)
        c_med, r_med = statistics.median(c_single), statistics.median(r_single)
        self.mlp.row({**base, "step_median_us": r3(med), "step_min_us": r3(mn), "step_p90_us": r3(p90),
                      "step_loop_us": r3(s_loop), "compute_median_us": r3(c_med), "allreduce_median_us": r3(r_med),
                      "step_graph_us": r3(g_us), "iters": len(s_single), "note": note})
        self.log(f"mlp {tokens:5d} tokens: step {med:8.1f} us (loop {s_loop:8.1f}), compute {c_med:8.1f}, "
                 f"all_reduce {r_med:8.1f}")

    def run_items(self, items, skip):
        for key in items:
            if key in skip:
                continue
            self.progress("start", key)
            self.inject("crash", key)
            kind, _, rest = key.partition(":")
            t = time.perf_counter()
            try:
                if kind == "host":
                    self.host_item(int(rest))
                elif kind == "coll":
                    op, _, b = rest.partition(":")
                    self.coll_item(op, int(b))
                elif kind == "mlp":
                    self.mlp_item(int(rest))
            finally:
                self.timings[key] = round(time.perf_counter() - t, 3)
            self.progress("end", key)
            if kind != "coll" or key.endswith(f":{1 << self.args.max_exp}"):
                self.write_meta()

    def facts(self):
        torch = self.torch
        f = {"torch_version": torch.__version__, "torch_cuda": torch.version.cuda, "backend": self.args.backend,
             "device": str(self.dev), "dtype": self.args.dtype, "hostname": socket.gethostname(),
             "pid": os.getpid()}
        if self.cuda:
            try:
                p = torch.cuda.get_device_properties(self.dev)
                f.update(gpu_name=p.name, gpu_cc=f"{p.major}.{p.minor}", gpu_sm_count=p.multi_processor_count,
                         gpu_total_mem=p.total_memory, cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"))
                v = torch.cuda.nccl.version()
                f["nccl_version"] = ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)
                f["peer_access"] = {j: torch.cuda.can_device_access_peer(self.local, j)
                                    for j in range(torch.cuda.device_count()) if j != self.local}
            except Exception as e:  # noqa: BLE001
                self.error("facts", e)
        return f


def no_multicast():
    """NVLink multicast (NVLS) off unless the caller set otherwise: the shared H200 hosts must not use it, and the
    timings should be of the ring/tree algorithms the emulator models."""
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")


def worker_main(rank, world, local_rank, args, init_method, attempt=0, skip=(), t_start=None):
    """One rank: initialise, run every item not in `skip`, write parts/rank<r>_*. Returns an exit code."""
    no_multicast()
    import torch
    import torch.distributed as dist
    t_start = t_start or time.time()
    w = None
    rc = 0
    try:
        if args.device == "cuda":
            torch.cuda.set_device(local_rank)
        kw = {}
        if args.device == "cuda" and args.backend == "nccl":
            kw["device_id"] = torch.device("cuda", local_rank)
        t = time.perf_counter()
        dist.init_process_group(args.backend, init_method=init_method, rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=max(60.0, args.stall * 2)), **kw)
        w = Worker(args, rank, world, local_rank, attempt, t_start)
        w.timings["init_process_group"] = round(time.perf_counter() - t, 2)
        facts = w.facts_d = w.facts()
        w.log(f"attempt {attempt}: {facts.get('gpu_name', facts['device'])}, torch {facts['torch_version']}, "
              f"NCCL {facts.get('nccl_version', '-')}, backend {args.backend}, {world} ranks")
        w.write_meta()
        w.barrier()
        w.progress("ready", "-")
        w.run_items(work_items(args), set(skip))
        w.barrier()
        w.timings["worker_total"] = round(time.perf_counter() - T0, 2)
        w.progress("finished", "-")
        w.write_meta({"finished": True})
    except Exception as e:  # noqa: BLE001 - e.g. a broken communicator: the parent restarts after this item
        rc = 1
        if w is not None:
            w.error("worker", e)
            w.write_meta()
        else:
            parts = os.path.join(args.out, "parts")
            os.makedirs(parts, exist_ok=True)
            with open(os.path.join(parts, f"rank{rank}_attempt{attempt}_meta.json"), "w") as f:
                json.dump({"rank": rank, "attempt": attempt,
                           "errors": [{"what": "init", "error": f"{type(e).__name__}: {e}",
                                       "traceback": traceback.format_exc()}]}, f, indent=1)
            print(f"rank {rank}: start-up failed: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
    finally:
        try:
            if dist.is_initialized():
                dist.destroy_process_group()
        except Exception:  # noqa: BLE001
            pass
    return rc


def _spawned(rank, world, args, init_method, attempt, skip, t_start):
    sys.exit(worker_main(rank, world, rank, args, init_method, attempt, skip, t_start))


# ------------------------------------------------------------------------------------------------ the parent
def run_cmd(cmd, timeout=20):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return (p.stdout if p.returncode == 0 else p.stdout + p.stderr).strip()
    except Exception as e:  # noqa: BLE001
        return f"unavailable: {type(e).__name__}: {e}"


def smi_facts():
    q = ("index,name,pci.bus_id,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,"
         "temperature.gpu")
    return run_cmd(["nvidia-smi", f"--query-gpu={q}", "--format=csv"])


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def read_csv(path):
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except FileNotFoundError:
        return []


def read_progress(out, world):
    """{rank: [(what, key, attempt), ...]} from parts/rank<r>_progress.txt."""
    res = {}
    for r in range(world):
        lines = []
        try:
            with open(os.path.join(out, "parts", f"rank{r}_progress.txt")) as f:
                for line in f:
                    p = line.split()
                    if len(p) >= 3:
                        lines.append((p[0], p[1], int(p[2])))
        except FileNotFoundError:
            pass
        res[r] = lines
    return res


def progress_mtime(out, world):
    m = 0.0
    for r in range(world):
        try:
            m = max(m, os.path.getmtime(os.path.join(out, "parts", f"rank{r}_progress.txt")))
        except OSError:
            pass
    return m


def merge(args, world, extra, failed_items):
    """Combine parts/ into the output tables and provenance.json."""
    parts = os.path.join(args.out, "parts")
    order = {op: i for i, op in enumerate(OPS)}

    def num(v):
        try:
            return int(v)
        except (TypeError, ValueError):
            return 0

    # Rows for measurements whose workers died or hung, on every rank.
    failed_rows = {"collectives": [], "host": [], "mlp": []}
    for key, why in failed_items.items():
        kind, _, rest = key.partition(":")
        for r in range(world):
            if kind == "coll":
                op, _, b = rest.partition(":")
                failed_rows["collectives"].append({"op": op, "bytes": b, "rank": r, "nranks": world,
                                                   "note": f"failed: {why}"})
            elif kind == "host":
                failed_rows["host"].append({"op": "all_reduce", "bytes": rest, "rank": r, "nranks": world,
                                            "note": f"failed: {why}"})
            elif kind == "mlp":
                failed_rows["mlp"].append({"tokens": rest, "rank": r, "nranks": world, "hidden": args.mlp_hidden,
                                           "intermediate": args.mlp_inter, "note": f"failed: {why}"})
    tables = {"collectives.csv": ("collectives", COLL_FIELDS,
                                  lambda r: (order.get(r["op"], 99), num(r["bytes"]), num(r["rank"]))),
              "host.csv": ("host", HOST_FIELDS, lambda r: (num(r["bytes"]), num(r["rank"]))),
              "mlp.csv": ("mlp", MLP_FIELDS, lambda r: (num(r["tokens"]), num(r["rank"])))}
    counts = {}
    for name, (part, fields, key) in tables.items():
        rows = list(failed_rows[part])
        for r in range(world):
            rows += read_csv(os.path.join(parts, f"rank{r}_{part}.csv"))
        rows.sort(key=key)
        with open(os.path.join(args.out, name), "w", newline="") as f:
            wr = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
            wr.writeheader()
            wr.writerows(rows)
        counts[name] = len(rows)
    metas = []
    for fn in sorted(os.listdir(parts)):
        if fn.endswith("_meta.json"):
            try:
                with open(os.path.join(parts, fn)) as f:
                    metas.append(json.load(f))
            except (OSError, json.JSONDecodeError) as e:
                metas.append({"file": fn, "unreadable": f"{type(e).__name__}: {e}"})
    facts = [m.get("facts") for m in metas if m.get("facts")]
    facts0 = facts[0] if facts else {}
    gpu_names = {}
    for m in metas:
        if m.get("facts", {}).get("gpu_name"):
            gpu_names[m["rank"]] = m["facts"]["gpu_name"]
    prov = {
        "tool": "predictors/calibration/nccl_bench.py",
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(shlex.quote(a) for a in [sys.executable] + sys.argv),
        "args": dict(vars(args)),
        "nranks": world,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "hostname": socket.gethostname(),
        "torch_version": facts0.get("torch_version"),
        "torch_cuda": facts0.get("torch_cuda"),
        "nccl_version": facts0.get("nccl_version"),
        "gpu_names": gpu_names,
        "nccl_env": {k: v for k, v in sorted(os.environ.items())
                     if k.startswith(("NCCL_", "TORCH_NCCL_", "TORCH_SYMM_MEM_", "NVSHMEM_"))},
        "cuda_env": {k: v for k, v in sorted(os.environ.items()) if k.startswith("CUDA_")},
        "conventions": {
            "bytes": "nccl-tests: the larger buffer (all_gather output, reduce_scatter input); per direction for p2p",
            "event_*": "one op between CUDA events on the current stream after barrier + synchronize, microseconds",
            "loop_us": "median of 3 loops of loop_iters back-to-back ops between two events, per op, microseconds",
            "graph_us": "median of 3 replays of one CUDA graph of graph_iters ops, per op, microseconds",
            "gbps": "1e9 bytes/s; busbw = algbw x nccl-tests factor (all_reduce 2(n-1)/n, gather/scatter (n-1)/n)",
            "host_*": "perf_counter around one dist.all_reduce call, no synchronize, microseconds",
            "mlp": "column-parallel F.linear -> silu -> row-parallel F.linear -> all_reduce; intermediate is the "
                   "full size (each rank holds intermediate/nranks)",
        },
        "rows": counts,
        "failed_items": failed_items,
        "errors": [dict(e, rank=m.get("rank"), attempt=m.get("attempt")) for m in metas for e in m.get("errors", [])],
        "workers": metas,
    }
    prov.update(extra)
    with open(os.path.join(args.out, "provenance.json"), "w") as f:
        json.dump(prov, f, indent=1, default=str)
    return prov


def stop(procs, grace=5.0):
    """Terminate the given worker processes (ours), then kill what is left."""
    for p in procs:
        if p.is_alive():
            p.terminate()
    t_end = time.monotonic() + grace
    for p in procs:
        p.join(max(0.1, t_end - time.monotonic()))
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join(2)


def supervise(args, world, extra):
    """Run the workers; after a crash or a hang start fresh ones that skip what is done and the failed item."""
    import multiprocessing as mp
    ctx = mp.get_context("spawn")
    t_start = time.time()
    items = work_items(args)
    failed = {}            # item -> why
    attempts = []
    for attempt in range(args.max_restarts + 1):
        prog = read_progress(args.out, world)
        done = {k for (w, k, _) in prog.get(0, []) if w == "end"}
        skip = done | set(failed)
        if all(k in skip for k in items):
            break
        init_method = f"tcp://127.0.0.1:{free_port()}"
        print(f"[{time.time() - t_start:7.1f}s] attempt {attempt}: spawning {world} ranks ({args.backend}, "
              f"{args.device}); {len(skip)} of {len(items)} items done or failed", flush=True)
        procs = [ctx.Process(target=_spawned, args=(r, world, args, init_method, attempt, sorted(skip), t_start),
                             name=f"nccl_bench_rank{r}") for r in range(world)]
        for p in procs:
            p.start()
        t_attempt = time.time()
        last_change, last_mtime = time.time(), progress_mtime(args.out, world)
        outcome = "finished"
        while any(p.is_alive() for p in procs):
            time.sleep(0.2)
            now = time.time()
            m = progress_mtime(args.out, world)
            if m != last_mtime:
                last_mtime, last_change = m, now
            ready = all(any(w == "ready" and a == attempt for (w, _, a) in lines)
                        for lines in read_progress(args.out, world).values())
            if now - t_start > args.deadline:
                outcome = "deadline"
            elif any(p.exitcode not in (None, 0) for p in procs):
                outcome = "a rank died"
            elif not ready and now - t_attempt > args.init_timeout:
                outcome = "start-up timed out"
            elif ready and now - last_change > args.stall:
                outcome = f"no progress for {args.stall:.0f} s"
            else:
                continue
            if outcome == "a rank died":          # the others may still finish what they were doing
                t_end = time.time() + 5
                while any(p.is_alive() for p in procs) and time.time() < t_end:
                    time.sleep(0.2)
            stop(procs)
            break
        for p in procs:
            p.join(2)
        codes = {p.name: p.exitcode for p in procs}
        if outcome == "finished" and any(c != 0 for c in codes.values()):
            outcome = "a rank failed"
        # The item in progress when it went wrong: started (this attempt) on some rank and not ended on all.
        prog = read_progress(args.out, world)
        current = None
        for lines in prog.values():
            started = [k for (w, k, a) in lines if w == "start" and a == attempt]
            ended = {k for (w, k, a) in lines if w == "end" and a == attempt}
            open_ = [k for k in started if k not in ended]
            if open_:
                current = open_[-1] if current is None else current
        attempts.append({"attempt": attempt, "outcome": outcome, "exit_codes": codes, "item": current,
                         "seconds": round(time.time() - t_attempt, 1)})
        print(f"[{time.time() - t_start:7.1f}s] attempt {attempt}: {outcome}"
              + (f" during {current}" if current and outcome != "finished" else "") + f"; exit codes {codes}",
              flush=True)
        if outcome == "finished" or outcome == "deadline":
            break
        if current is None:
            if not any(w == "ready" for lines in prog.values() for (w, _, a) in lines if a == attempt):
                print("workers did not start; giving up", flush=True)
                break
            # Failed between items: nothing to blame; the next attempt retries from where it stopped.
            continue
        failed[current] = f"{outcome} (attempt {attempt})"
    extra["attempts"] = attempts
    extra["wall_s"] = round(time.time() - t_start, 2)
    ok = bool(attempts) and attempts[-1]["outcome"] == "finished" and not failed
    return failed, ok


def main(argv=None):
    args = parse_args(argv)
    args.out = os.path.abspath(args.out)
    parts = os.path.join(args.out, "parts")
    if os.path.isdir(parts):          # results of an earlier run in the same directory: start afresh
        for fn in os.listdir(parts):
            os.remove(os.path.join(parts, fn))
    os.makedirs(parts, exist_ok=True)
    no_multicast()
    if args.backend == "nccl" and not args.no_nccl_debug and "NCCL_DEBUG" not in os.environ:
        os.environ["NCCL_DEBUG"] = "INFO"
        os.environ.setdefault("NCCL_DEBUG_SUBSYS", "INIT,GRAPH,ENV")
        os.environ.setdefault("NCCL_DEBUG_FILE", os.path.join(args.out, "nccl_debug.%h.%p.log"))
    gpu = args.device == "cuda"
    extra = {"nvidia_smi_before": smi_facts() if gpu else None,
             "nvidia_smi_topo": run_cmd(["nvidia-smi", "topo", "-m"]) if gpu else None,
             "nvidia_smi_nvlink": run_cmd(["nvidia-smi", "nvlink", "-s"]) if gpu else None}

    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:          # under torchrun: this process is one rank
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        local = int(os.environ.get("LOCAL_RANK", rank))
        # Rank 0 cleared parts/ above before it joined the rendezvous, which the other ranks wait for before
        # they write anything.
        rc = worker_main(rank, world, local, args, "env://")
        if rank == 0:
            time.sleep(2.0)       # the other ranks write their last rows
            extra["nvidia_smi_after"] = smi_facts() if gpu else None
            extra["launcher"] = "torchrun"
            merge(args, world, extra, {})
            print(f"wrote {args.out}", flush=True)
        return rc

    if args.nproc is None:
        if gpu:
            import torch
            args.nproc = torch.cuda.device_count() or 1      # counts devices only; the workers own CUDA
        else:
            args.nproc = 2
    world = args.nproc
    failed, ok = supervise(args, world, extra)
    extra["nvidia_smi_after"] = smi_facts() if gpu else None
    extra["launcher"] = "self-spawned"
    prov = merge(args, world, extra, failed)
    print(f"[{time.perf_counter() - T0:7.1f}s] wrote {args.out}: rows {prov['rows']}; "
          f"{len(prov['errors'])} error(s) recorded; {len(failed)} item(s) failed"
          + (f": {', '.join(failed)}" if failed else ""), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
