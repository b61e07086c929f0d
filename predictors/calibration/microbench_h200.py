"""Microbenchmarks of a real GPU (written for the H200), for fitting and validating timewarp's kernel-time model.

Run on the GPU machine:   python3 microbench_h200.py OUTDIR [--budget SECONDS] [--sections a,b,...]
Check the logic on a CPU: python3 microbench_h200.py OUTDIR --dry-run   (tiny sizes, device cpu, no graphs)
Host speed only (to compare the dev machine's Python speed with the GPU host's):
                          python3 microbench_h200.py OUTDIR --host-only

Writes under OUTDIR (each table rewritten after its section, so a run cut short still leaves data):
  gemm.parquet        matmul / F.linear / bmm by shape and dtype (section gemm_models: other open models'
                      linear layers, tagged with the model's name)
  sdpa.parquet        F.scaled_dot_product_attention, prefill and decode shapes, default and forced backends
  elementwise.parquet add, mul, silu, gelu, rms_norm, softmax, sum, argmax, copy, casts by element count
  memcpy.parquet      H2D/D2H (pinned, pageable), D2D, memset by bytes
  host.parquet        host-side costs: eager launch overhead, graph replay cost, synchronize round trip, Python speed
  e2e.parquet         transformers LlamaForCausalLM (Llama-3-8B shapes, 4 and 32 layers): prefill, decode step, generate
  kernels.parquet     kernel names and device durations read with torch.profiler for a subset of the above
  summary.json        provenance, headline figures, GPU clocks at section boundaries, the run's log

Timing: CUDA events around either a captured CUDA graph of `inner` launches replayed once (mode 'graph': no
launch gaps, the device time of the kernels) or an eager Python loop of `inner` launches (mode 'eager_loop':
what eager PyTorch achieves, launch-bound for short kernels). Warm-up first; `inner` is chosen so one timed
repetition lasts about 2 ms; the median over `reps` repetitions is reported per launch (t_median_us), with min
and max. A replay's time includes a fixed cost (the host's launch while the GPU idles, the graph's start: about
12 us on the H200), which a graph of `inner` nodes divides among them; `--graph-slope` also times 4 x inner
nodes and reports the slope (node_us) and that fixed cost. Inputs are rotated over n_buffers copies (at least ~256 MiB in all where that fits in 64 copies) so
weights and activations come from HBM rather than the 60 MB L2, as in a model whose layers each have their
own weights. `--cool-ms MS` keeps every timed repetition at the card's full clock (see Ctx.cool). Each row
notes when it ended (`t_end_s`, seconds from the start). Nothing here changes GPU clocks or settings.
"""
import argparse
import datetime
import json
import math
import os
import platform
import random
import socket
import statistics
import subprocess
import sys
import time
import traceback

T0 = time.perf_counter()
LOG = []


def log(msg):
    line = f"[{time.perf_counter() - T0:7.1f}s] {msg}"
    LOG.append(line)
    print(line, flush=True)


# ----------------------------------------------------------------------------------------------------------
# Python-only host speed (no torch needed)
# ----------------------------------------------------------------------------------------------------------

def python_host_bench(reps=5):
    """Pure-Python workloads; the ratio of the dev machine's to the GPU host's times is the host-speed factor."""
    rng = random.Random(1234)
    floats = [rng.random() for _ in range(10 ** 6)]
    keys = [str(i) for i in range(200_000)]

    def sum_range():
        return sum(range(10 ** 6))

    def dict_build_lookup():
        d = {k: i for i, k in enumerate(keys)}
        s = 0
        for k in keys[::2]:
            s += d[k]
        return s

    def sort_floats():
        return sorted(floats)[0]

    def small_objects():
        out = []
        for i in range(200_000):
            out.append((i, i * 2, str(i % 97)))
        return len(out)

    res = {}
    for name, fn in [("sum_range_1e6", sum_range), ("dict_200k_build_lookup", dict_build_lookup),
                     ("sort_1e6_floats", sort_floats), ("tuple_list_200k", small_objects)]:
        fn()
        ts = []
        for _ in range(reps):
            t = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t)
        res[name] = {"median_s": statistics.median(ts), "min_s": min(ts), "reps": reps}
    return res


def cpu_info():
    info = {"python": sys.version.split()[0], "platform": platform.platform(), "machine": platform.machine(),
            "nproc": os.cpu_count(), "hostname": socket.gethostname()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu_model"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return info


# ----------------------------------------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------------------------------------

class Out:
    def __init__(self, outdir, prov):
        self.outdir = outdir
        self.prov = prov
        self.tables = {}
        self.summary = {"provenance": prov, "sections": {}, "clocks": [], "headline": {}, "log": LOG}
        os.makedirs(outdir, exist_ok=True)

    def add(self, table, row):
        self.tables.setdefault(table, []).append(row)

    def write(self, table):
        rows = self.tables.get(table)
        if not rows:
            return
        import pandas as pd
        import pyarrow as pa
        import pyarrow.parquet as pq
        df = pd.DataFrame(rows)
        for c in ("gpu_name", "driver", "torch", "cuda", "run_date"):
            df[c] = self.prov.get(c)
        for c in df.columns:  # mixed object columns -> strings so pyarrow takes them
            if df[c].dtype == object:
                df[c] = df[c].map(lambda v: None if v is None else (v if isinstance(v, str) else json.dumps(v)))
        t = pa.Table.from_pandas(df, preserve_index=False)
        t = t.replace_schema_metadata({**(t.schema.metadata or {}),
                                       b"timewarp_provenance": json.dumps(self.prov).encode()})
        path = os.path.join(self.outdir, f"{table}.parquet")
        pq.write_table(t, path + ".tmp")
        os.replace(path + ".tmp", path)

    def write_summary(self):
        path = os.path.join(self.outdir, "summary.json")
        with open(path + ".tmp", "w") as f:
            json.dump(self.summary, f, indent=1, default=str)
        os.replace(path + ".tmp", path)


# ----------------------------------------------------------------------------------------------------------
# Bench machinery
# ----------------------------------------------------------------------------------------------------------

class Ctx:
    def __init__(self, args):
        import torch
        self.torch = torch
        self.dry = args.dry_run
        self.dev = torch.device("cpu" if self.dry else "cuda")
        self.cuda = self.dev.type == "cuda"
        self.deadline = T0 + args.budget
        self.rot_bytes = (1 << 20) if self.dry else (256 << 20)
        self.max_bufs = 4 if self.dry else 64
        self.target_s = 0.0005 if self.dry else 0.002
        self.reps = 3 if self.dry else 7
        # --graph-slope: graph rows also give node_us, the slope between replays of inner and 4 x inner nodes
        self.graph_slope = getattr(args, "graph_slope", False)
        self.slope_reuse = getattr(args, "slope_reuse", False)
        # --no-profile: no torch.profiler session in the elementwise section; a CUPTI session leaves every later
        # tiny graph node 0.2-0.4 us slower (clock_state_probe.py), so the profiled runs' node_us carry it
        self.no_profile = getattr(args, "no_profile", False)
        self.memcpy_grid = getattr(args, "memcpy_grid", "pow2")
        self.memcpy_passes = max(1, getattr(args, "memcpy_passes", 1))
        # cycles of torch.cuda._sleep before a 'busy' replay (about 0.5 ms at H200 clocks); 0 where the
        # device has no such kernel (under emulation it is one more kernel, timed like any other)
        self.busy_cycles = 1_000_000 if self.cuda else 0
        self.cool_s = getattr(args, "cool_ms", 0.0) / 1e3
        self.cool_sections = set((getattr(args, "cool_sections", None) or ",".join(SECTIONS)).split(","))
        self.section = None
        self.names = getattr(args, "names", "budget")
        self._hot_s = 0.0

    def left(self):
        return self.deadline - time.perf_counter()

    def probe(self, out, label):
        """Host launch overhead right now (2000 eager add_ on 1 element + synchronize): tracks host drift
        over the run and any lasting cost of the profiler (CUPTI) after a section used it."""
        torch = self.torch
        if not hasattr(self, "_px"):
            self._px = torch.ones(1, device=self.dev)
        x = self._px
        n = 200 if self.dry else 2000
        for _ in range(50):
            x.add_(1)
        self.sync()
        t = time.perf_counter()
        for _ in range(n):
            x.add_(1)
        self.sync()
        v = (time.perf_counter() - t) / n * 1e6
        out.add("host", {"metric": "probe_eager_add_inplace_1elem", "value_us": v, "n": n,
                         "note": f"after section {label}; perf_counter over n launches + synchronize",
                         "after_section": label})
        return v

    # The H200 lowers its clock 30-90 ms into compute-bound work and an idle gap of 30 ms or more restores it
    # (predictors/data/h200/power_2026-11-30, -30b, gemm_cool_2026-12-03). Rows timed with --cool-ms are the
    # full-clock figures that shim_c/core/power.c stretches; the untimed warm-up keeps the first launch after
    # the wait (0.1-0.2 ms late on the real host: sdpa_cool_2026-12-03) out of the timed repetition.
    HOT_LIMIT_S = 0.025

    def cool(self, rep_s, warm, warm_s):
        """--cool-ms: before a timed repetition of rep_s seconds that would end more than HOT_LIMIT_S of work
        after the last cool-down, idle cool_ms, then run warm() (warm_s seconds of the same work, untimed) so
        that the clock has ramped up. Without --cool-ms, nothing."""
        if not self.cool_s or self.section not in self.cool_sections:
            return
        if self._hot_s + rep_s > self.HOT_LIMIT_S:
            self.sync()
            time.sleep(self.cool_s)
            warm()
            self._hot_s = warm_s
        self._hot_s += rep_s

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def nbufs(self, nbytes):
        return int(max(1, min(self.max_bufs, math.ceil(self.rot_bytes / max(1, nbytes)))))

    def timer(self):
        torch = self.torch
        if self.cuda:
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

            def start():
                e0.record()

            def stop():
                e1.record()
                e1.synchronize()
                return e0.elapsed_time(e1) / 1e3
        else:
            box = {}

            def start():
                box["t"] = time.perf_counter()

            def stop():
                return time.perf_counter() - box["t"]
        return start, stop

    def measure(self, fn, mode="graph", max_inner=512, reps=None, slope_reuse=False):
        """fn(j) launches one operation (using buffer j % n). Returns per-launch seconds (median/min/max).
        slope_reuse: the 4 x inner graph of --graph-slope calls fn(j % inner), so that both graphs touch the
        same buffers (the same working set: without it a small copy's inner graph fits in the L2 while its
        4 x inner graph does not, and the slope mixes the two regimes)."""
        torch = self.torch
        reps = reps or self.reps
        start, stop = self.timer()
        self._hot_s = 1.0   # whatever ran before: cool down before the first timed repetition
        for j in range(2):
            fn(j)
        self.sync()
        start()
        fn(0)
        t1 = stop()
        big = t1 > 0.02
        reps = min(reps, 5) if big else reps
        inner = int(max(1, min(max_inner, self.target_s / max(t1, 1e-7))))
        times = []
        if mode == "graph" and self.cuda:
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for j in range(2):
                    fn(j)
            torch.cuda.current_stream().wait_stream(s)
            self.sync()

            def capture(n):
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g, stream=s):
                    for j in range(n):
                        fn(j % inner if slope_reuse else j)
                g.replay()
                self.sync()
                return g

            def replays(g, nodes, busy=False):
                out = []
                rep_s = t1 * nodes
                for _ in range(reps):
                    if rep_s <= 0.005:
                        self.cool(rep_s, g.replay, rep_s)
                    else:
                        self.cool(rep_s, lambda: fn(0), t1)
                    if busy:   # the GPU busy while the host launches: only the device's own per-replay cost shows
                        torch.cuda._sleep(self.busy_cycles)
                    start()
                    g.replay()
                    out.append(stop())
                return out

            g = capture(inner)
            totals = replays(g, inner)
            times = [t / inner for t in totals]
            if self.graph_slope:
                # per-node device time, free of the per-replay cost (host launch, graph start) that a replay
                # of `inner` nodes divides among them: the slope between two graphs, of inner and 4 x inner
                del g
                g4 = capture(4 * inner)
                t4 = statistics.median(replays(g4, 4 * inner))
                del g4
                g = capture(inner)
                t1r = statistics.median(replays(g, inner))
                node = (t4 - t1r) / (3 * inner)
                busy = statistics.median(replays(g, inner, busy=True)) if self.busy_cycles else float("nan")
                slope = {"node_us": node * 1e6, "replay_fixed_us": (t1r - inner * node) * 1e6,
                         "replay_fixed_busy_us": (busy - inner * node) * 1e6}
            del g
        else:
            mode = "eager_loop" if self.cuda else "cpu_loop"

            def loop():
                for j in range(inner):
                    fn(j)
            for _ in range(reps):
                self.cool(t1 * inner, loop if t1 * inner <= 0.005 else (lambda: fn(0)), min(t1 * inner, 0.005))
                start()
                for j in range(inner):
                    fn(j)
                times.append(stop() / inner)
        r = {"mode": mode, "inner": inner, "reps": reps, "t_median_us": statistics.median(times) * 1e6,
             "t_min_us": min(times) * 1e6, "t_max_us": max(times) * 1e6,
             "t_end_s": round(time.perf_counter() - T0, 4), "cool_ms": self.cool_s * 1e3}
        if mode == "graph" and self.cuda and self.graph_slope:
            r.update(slope)
        return r

    def profile(self, fn, out, source, label):
        """Kernel names + device durations of one call of fn, appended to the kernels table."""
        torch = self.torch
        from torch.profiler import profile, ProfilerActivity
        from torch.autograd import DeviceType
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.cuda else [])
        fn()
        self.sync()
        with profile(activities=acts) as p:
            fn()
            self.sync()
        evs = [e for e in p.events() if e.device_type != DeviceType.CPU]
        if not self.cuda:  # dry run: record top-level CPU ops so the path is exercised
            evs = [e for e in p.events() if e.cpu_parent is None and e.name.startswith("aten::")]
        evs.sort(key=lambda e: e.time_range.start)
        names = []
        for i, e in enumerate(evs):
            kind = "memcpy" if "memcpy" in e.name.lower() else "memset" if "memset" in e.name.lower() else "kernel"
            out.add("kernels", {"source": source, "label": label, "idx": i, "kernel": e.name, "kind": kind,
                                "device_us": e.time_range.elapsed_us(),
                                "start_us_rel": e.time_range.start - evs[0].time_range.start})
            names.append(e.name)
        return names


def section(name, out, ctx_or_none, fn, min_left=5.0):
    if ctx_or_none is not None and ctx_or_none.left() < min_left:
        log(f"SKIP section {name}: only {ctx_or_none.left():.0f}s of budget left")
        out.summary["sections"][name] = {"status": "skipped (budget)"}
        out.write_summary()
        return
    t = time.perf_counter()
    log(f"== section {name}")
    if ctx_or_none is not None:
        ctx_or_none.section = name
    status = "ok"
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - keep going, record the failure
        status = f"error: {type(e).__name__}: {e}"
        log(status)
        log(traceback.format_exc())
    dt = time.perf_counter() - t
    out.summary["sections"][name] = {"status": status, "seconds": round(dt, 2)}
    if ctx_or_none is not None:
        try:
            out.summary["sections"][name]["probe_launch_us_after"] = round(ctx_or_none.probe(out, name), 3)
        except Exception as e:  # noqa: BLE001
            log(f"probe failed: {e}")
    clocks = gpu_clocks() if ctx_or_none is not None and ctx_or_none.cuda else None
    if clocks:
        out.summary["clocks"].append({"after": name, **clocks})
    for tname in list(out.tables):
        out.write(tname)
    out.write_summary()
    log(f"== section {name} done in {dt:.1f}s ({status})")


def gpu_clocks():
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw,"
                            "clocks_throttle_reasons.active", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=10)
        return {"nvidia_smi": r.stdout.strip()}
    except Exception as e:  # noqa: BLE001
        return {"nvidia_smi_error": str(e)}


def provenance(args):
    prov = {"run_date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": " ".join([os.path.basename(sys.executable)] + sys.argv), "dry_run": args.dry_run,
            "host": cpu_info()}
    try:
        import torch
        prov["torch"] = torch.__version__
        prov["cuda"] = torch.version.cuda
        if torch.cuda.is_available() and not args.dry_run:
            p = torch.cuda.get_device_properties(0)
            prov["gpu_name"] = p.name
            prov["sm_count"] = p.multi_processor_count
            prov["gpu_mem_bytes"] = p.total_memory
            prov["l2_bytes"] = getattr(p, "L2_cache_size", None)
            prov["cc"] = f"{p.major}.{p.minor}"
            prov["cudnn"] = torch.backends.cudnn.version()
            prov["allow_tf32_default"] = torch.backends.cuda.matmul.allow_tf32
            prov["bf16_reduced_precision_reduction"] = torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction
        else:
            prov["gpu_name"] = "cpu-dry-run"
    except Exception as e:  # noqa: BLE001
        prov["torch_error"] = str(e)
    try:
        import pynvml
        pynvml.nvmlInit()
        prov["driver"] = pynvml.nvmlSystemGetDriverVersion()
        if isinstance(prov["driver"], bytes):
            prov["driver"] = prov["driver"].decode()
    except Exception:  # noqa: BLE001
        try:
            r = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                               capture_output=True, text=True, timeout=10)
            prov["driver"] = r.stdout.strip() or None
        except Exception:  # noqa: BLE001
            prov["driver"] = None
    try:
        import importlib.metadata as md
        vers = {}
        for d in md.distributions():
            n = (d.metadata["Name"] or "").lower()
            if n.startswith("nvidia-") or n in ("torch", "triton", "transformers", "pandas", "pyarrow", "numpy"):
                vers[n] = d.version
        prov["packages"] = dict(sorted(vers.items()))
    except Exception as e:  # noqa: BLE001
        prov["packages_error"] = str(e)
    return prov


def loaded_libs():
    libs = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                p = line.split()[-1]
                if any(k in p for k in ("libcublas", "libcudnn.so", "libcudart", "libnvrtc", "libcuda.so")):
                    libs.add(p)
    except OSError:
        pass
    return sorted(libs)


def cublas_version():
    import ctypes
    for name in ("libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"):
        try:
            lib = ctypes.CDLL(name)
            lib.cublasLtGetVersion.restype = ctypes.c_size_t
            return {"lib": name, "cublasLtGetVersion": int(lib.cublasLtGetVersion())}
        except OSError:
            continue
    return None


# ----------------------------------------------------------------------------------------------------------
# Sections
# ----------------------------------------------------------------------------------------------------------

GEMM_M = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192]
GEMM_NK = [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336), (14336, 4096), (128256, 4096),
           (10240, 8192), (8192, 8192), (57344, 8192), (8192, 28672)]
PROFILE_GEMM = {(m, n, k) for m in (1, 16, 128, 1024, 8192)
                for (n, k) in ((4096, 4096), (14336, 4096), (128256, 4096), (8192, 28672))}


def dtype_of(torch, name):
    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32, "tf32": torch.float32}[name]


def gemm_one(ctx, out, op, dname, m, n, k, batch=1, modes=("graph",), prof=False, tag=""):
    torch = ctx.torch
    import torch.nn.functional as F
    dt = dtype_of(torch, dname)
    es = torch.tensor([], dtype=dt).element_size()
    base = {"op": op, "dtype": dname, "m": m, "n": n, "k": k, "batch": batch, "tag": tag}
    flops = 2.0 * m * n * k * batch
    min_bytes = es * batch * (m * k + k * n + m * n)
    prev_tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = dname == "tf32"
    try:
        if op == "bmm":
            nb = ctx.nbufs(es * batch * (m * k + k * n))
            A = [torch.randn(batch, m, k, device=ctx.dev, dtype=dt) for _ in range(nb)]
            B = [torch.randn(batch, k, n, device=ctx.dev, dtype=dt) for _ in range(nb)]
            fn = lambda j: torch.bmm(A[j % nb], B[j % nb])  # noqa: E731
        else:
            nb = ctx.nbufs(es * n * k)
            a = torch.randn(m, k, device=ctx.dev, dtype=dt)
            if op == "linear":
                W = [torch.randn(n, k, device=ctx.dev, dtype=dt) for _ in range(nb)]
                fn = lambda j: F.linear(a, W[j % nb])  # noqa: E731
            else:
                W = [torch.randn(k, n, device=ctx.dev, dtype=dt) for _ in range(nb)]
                fn = lambda j: torch.matmul(a, W[j % nb])  # noqa: E731
        kern = None
        if prof:
            try:
                kern = " | ".join(ctx.profile(lambda: fn(0), out, "gemm",
                                              json.dumps({**base})))
            except Exception as e:  # noqa: BLE001
                kern = f"<profile error {e}>"
        for mode in modes:
            row = dict(base, n_buffers=nb, flops=flops, min_bytes=min_bytes, kernels=kern)
            try:
                r = ctx.measure(fn, mode=mode)
                row.update(r)
                t = r["t_median_us"] * 1e-6
                row["tflops"] = flops / t / 1e12
                row["gbps_min_bytes"] = min_bytes / t / 1e9
            except Exception as e:  # noqa: BLE001
                row.update(mode=mode, error=f"{type(e).__name__}: {e}")
            out.add("gemm", row)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev_tf32


def sec_gemm_main(ctx, out):
    ms = [1, 16, 128] if ctx.dry else GEMM_M
    nks = [(96, 64), (64, 128)] if ctx.dry else GEMM_NK
    for (n, k) in nks:
        if ctx.left() < 60:
            log("gemm_main: stopping early (budget)")
            break
        t = time.perf_counter()
        for m in ms:
            # kernel names for every shape while the budget is comfortable, else for a fixed subset
            gemm_one(ctx, out, "linear", "bf16", m, n, k, modes=("graph", "eager_loop"),
                     prof=(m, n, k) in PROFILE_GEMM or (ctx.names == "budget" and ctx.left() > 240)
                     or (ctx.dry and m == 1))
            gemm_one(ctx, out, "matmul", "bf16", m, n, k, modes=("graph",), prof=ctx.dry and m == 16)
        ctx.torch.cuda.empty_cache() if ctx.cuda else None
        last = [r for r in out.tables["gemm"] if r.get("n") == n and r.get("k") == k and r.get("m") == ms[-1]]
        log(f"gemm n={n} k={k}: {time.perf_counter() - t:.1f}s; m={ms[-1]} linear graph "
            f"{last[0].get('t_median_us', float('nan')):.1f}us {last[0].get('tflops', float('nan')):.0f} TFLOP/s")


def sec_gemm_extra(ctx, out):
    cubes = [32, 64] if ctx.dry else [1024, 2048, 4096, 8192, 16384]
    for dn in ("bf16", "fp16", "tf32", "fp32"):
        for c in cubes:
            if dn in ("fp32",) and c > 8192:
                continue
            gemm_one(ctx, out, "matmul", dn, c, c, c, prof=(c == cubes[-2]), tag="cube")
        log(f"cubes {dn} done; 8192^3/last: {out.tables['gemm'][-1].get('tflops', float('nan')):.0f} TFLOP/s")
    ms = [1, 16] if ctx.dry else [1, 16, 128, 1024, 4096]
    nks = [(64, 64)] if ctx.dry else [(4096, 4096), (14336, 4096), (4096, 14336)]
    for dn in ("fp16", "tf32", "fp32"):
        for (n, k) in nks:
            for m in ms:
                gemm_one(ctx, out, "linear", dn, m, n, k, prof=(m in (1, 1024) and n == k), tag="dtype_subset")
        if ctx.left() < 40:
            log("gemm_extra: stopping early (budget)")
            return
    bmms = [(4, 8, 16, 8)] if ctx.dry else [
        (32, 512, 128, 512), (32, 512, 512, 128), (128, 1024, 128, 1024), (128, 1024, 1024, 128),
        (256, 1, 128, 4096), (256, 1, 4096, 128), (64, 256, 256, 256), (8, 2048, 4096, 4096)]
    for (b, m, k, n) in bmms:
        gemm_one(ctx, out, "bmm", "bf16", m, n, k, batch=b, prof=True, tag="bmm")
    log("bmm done")


# The linear layers of other common open models (F.linear, bf16: (n_out, k) per projection QKV, O, gate-up,
# down, lm_head), so that a model that is not Llama-shaped finds rows of its own shapes or near ones. Shapes
# already in GEMM_NK are left out. From each model's config.json: hidden, heads x head_dim, KV heads,
# intermediate size, vocabulary.
MODEL_NK = {
    "qwen2.5-7b": [(4608, 3584), (3584, 3584), (37888, 3584), (3584, 18944), (152064, 3584)],
    "qwen2.5-14b": [(7168, 5120), (5120, 5120), (27648, 5120), (5120, 13824)],
    "qwen2.5-32b": [(55296, 5120), (5120, 27648), (152064, 5120)],
    "qwen2.5-72b": [(59136, 8192), (8192, 29568)],
    "mistral-nemo-12b": [(6144, 5120), (5120, 4096), (28672, 5120), (5120, 14336), (131072, 5120)],
    "gemma-2-9b": [(8192, 3584), (3584, 4096), (28672, 3584), (3584, 14336)],
    "llama-3.2-3b": [(5120, 3072), (3072, 3072), (16384, 3072), (3072, 8192), (128256, 3072)],
    "llama-3.2-1b": [(3072, 2048), (2048, 2048), (16384, 2048), (2048, 8192), (128256, 2048)],
    "phi-3-mini": [(9216, 3072)],
}


def sec_gemm_models(ctx, out):
    ms = [1, 16, 128] if ctx.dry else GEMM_M
    for model, nks in MODEL_NK.items():
        for (n, k) in ([(96, 64)] if ctx.dry else nks):
            if ctx.left() < 20:
                log("gemm_models: stopping early (budget)")
                return
            for m in ms:
                gemm_one(ctx, out, "linear", "bf16", m, n, k, prof=m in (1, 1024), tag=model)
            ctx.torch.cuda.empty_cache() if ctx.cuda else None
        log(f"gemm_models {model}: {len(nks)} shapes done, {ctx.left():.0f}s left")
        if ctx.dry:
            return


def sec_sdpa(ctx, out):
    torch = ctx.torch
    import torch.nn.functional as F
    try:
        from torch.nn.attention import sdpa_kernel, SDPBackend
        backends = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
                    "cudnn": SDPBackend.CUDNN_ATTENTION, "math": SDPBackend.MATH}
    except Exception:  # noqa: BLE001
        sdpa_kernel, backends = None, {}
    import contextlib
    H, HKV, D = (4, 2, 16) if ctx.dry else (32, 8, 128)
    dt = torch.bfloat16

    def one(phase, b, sq, skv, causal, gqa, backend="default", prof=False):
        es = 2
        kvh = HKV if gqa == "enable_gqa" else H
        per = es * b * (H * sq * D + 2 * kvh * skv * D)
        nb = ctx.nbufs(per)
        Q = [torch.randn(b, H, sq, D, device=ctx.dev, dtype=dt) for _ in range(nb)]
        K = [torch.randn(b, kvh, skv, D, device=ctx.dev, dtype=dt) for _ in range(nb)]
        V = [torch.randn(b, kvh, skv, D, device=ctx.dev, dtype=dt) for _ in range(nb)]
        kw = {"is_causal": causal}
        if gqa == "enable_gqa":
            kw["enable_gqa"] = True
        cm = (lambda: sdpa_kernel(backends[backend])) if backend != "default" else contextlib.nullcontext

        def fn(j):
            with cm():
                return F.scaled_dot_product_attention(Q[j % nb], K[j % nb], V[j % nb], **kw)
        # causal with sq == skv: half the score matrix
        pairs = sq * skv if not causal else sq * (sq + 1) / 2 + sq * (skv - sq)
        flops = 4.0 * b * H * D * pairs
        base = {"phase": phase, "batch": b, "q_len": sq, "kv_len": skv, "causal": causal, "gqa": gqa,
                "heads": H, "kv_heads": HKV, "head_dim": D, "backend": backend, "n_buffers": nb,
                "flops": flops, "min_bytes": per + es * b * H * sq * D}
        kern = None
        if prof:
            try:
                kern = " | ".join(ctx.profile(lambda: fn(0), out, "sdpa", json.dumps(base)))
            except Exception as e:  # noqa: BLE001
                kern = f"<profile error {type(e).__name__}: {e}>"
        modes = ("eager_loop", "graph") if ctx.cuda else ("eager_loop",)
        for mode in modes:
            row = dict(base, kernels=kern)
            try:
                r = ctx.measure(fn, mode=mode)
                row.update(r)
                t = r["t_median_us"] * 1e-6
                row["tflops"] = flops / t / 1e12
                row["gbps_min_bytes"] = row["min_bytes"] / t / 1e9
            except Exception as e:  # noqa: BLE001
                row.update(mode=mode, error=f"{type(e).__name__}: {str(e)[:300]}")
            out.add("sdpa", row)
        del Q, K, V

    bs = [1, 2] if ctx.dry else [1, 4, 16]
    seqs = [8, 16] if ctx.dry else [128, 512, 1024, 2048, 4096]
    for b in bs:
        for s in seqs:
            for causal in (True, False):
                for gqa in ("enable_gqa", "repeat_kv"):
                    prof = (b in (bs[0], bs[-1]) and s in (seqs[1], seqs[-1]) and causal) or ctx.left() > 200
                    one("prefill", b, s, s, causal, gqa, prof=prof)
        log(f"sdpa prefill b={b} done; last {out.tables['sdpa'][-1].get('t_median_us', float('nan')):.1f}us")
        if ctx.left() < 60:
            log("sdpa: stopping early (budget)")
            return
    dbs = [1, 2] if ctx.dry else [1, 4, 16, 64]
    kvs = [8, 32] if ctx.dry else [128, 256, 512, 1024, 2048, 4096, 8192]
    for b in dbs:
        for kv in kvs:
            for gqa in ("enable_gqa", "repeat_kv"):
                prof = b in (dbs[0], dbs[-1]) and kv in (kvs[-1], kvs[len(kvs) // 2]) or ctx.left() > 200
                one("decode", b, 1, kv, False, gqa, prof=prof)
    log("sdpa decode done")
    if ctx.left() < 50:
        return
    # forced backends on a subset (errors recorded where a backend refuses)
    for name in backends:
        for gqa in ("enable_gqa", "repeat_kv"):
            for (phase, b, sq, skv, causal) in ([("prefill", 2, 16, 16, True), ("decode", 2, 1, 32, False)]
                                                if ctx.dry else
                                                [("prefill", 4, 512, 512, True), ("prefill", 4, 2048, 2048, True),
                                                 ("decode", 16, 1, 1024, False), ("decode", 16, 1, 8192, False)]):
                one(phase, b, sq, skv, causal, gqa, backend=name, prof=True)
        log(f"sdpa forced backend {name} done")


def sec_elementwise(ctx, out):
    torch = ctx.torch
    import torch.nn.functional as F
    exps = list(range(10, 15)) if ctx.dry else list(range(10, 29))
    L = 4096 if not ctx.dry else 256
    eps = 1e-5

    def hf_rms(x, w):
        xf = x.to(torch.float32)
        var = xf.pow(2).mean(-1, keepdim=True)
        xf = xf * torch.rsqrt(var + eps)
        return w * xf.to(x.dtype)

    ops = ["add", "mul", "silu", "gelu", "rms_norm", "rms_norm_hf", "softmax", "sum", "argmax", "copy",
           "cast_to_other"]
    for dname in ("bf16", "fp32"):
        dt = dtype_of(torch, dname)
        other = torch.float32 if dt == torch.bfloat16 else torch.bfloat16
        es = 2 if dt == torch.bfloat16 else 4
        for e in exps:
            N = 1 << e
            row_len = min(N, L)
            shape2 = (N // row_len, row_len)
            nb = ctx.nbufs(3 * N * es)
            X = [torch.randn(shape2, device=ctx.dev, dtype=dt) for _ in range(nb)]
            Y = [torch.randn(shape2, device=ctx.dev, dtype=dt) for _ in range(nb)]
            w = torch.randn(row_len, device=ctx.dev, dtype=dt)
            fns = {
                "add": (lambda j: X[j % nb] + Y[j % nb], 3 * N * es),
                "mul": (lambda j: X[j % nb] * Y[j % nb], 3 * N * es),
                "silu": (lambda j: F.silu(X[j % nb]), 2 * N * es),
                "gelu": (lambda j: F.gelu(X[j % nb]), 2 * N * es),
                "rms_norm": (lambda j: F.rms_norm(X[j % nb], (row_len,), w, eps), 2 * N * es),
                "rms_norm_hf": (lambda j: hf_rms(X[j % nb], w), 2 * N * es),
                "softmax": (lambda j: torch.softmax(X[j % nb], dim=-1), 2 * N * es),
                "sum": (lambda j: X[j % nb].sum(), N * es),
                "argmax": (lambda j: X[j % nb].argmax(dim=-1), N * es),
                "copy": (lambda j: Y[j % nb].copy_(X[j % nb]), 2 * N * es),
                "cast_to_other": (lambda j: X[j % nb].to(other), N * es + N * (6 - es)),
            }
            for op in ops:
                fn, nbytes = fns[op]
                prof = (e in ((exps[-1],) if ctx.dry else (10, 16, 24))) and not ctx.no_profile
                kern = None
                if prof:
                    try:
                        kern = " | ".join(ctx.profile(lambda: fn(0), out, "elementwise",
                                                      json.dumps({"op": op, "dtype": dname, "numel": N})))
                    except Exception as ex:  # noqa: BLE001
                        kern = f"<profile error {ex}>"
                for mode in (("graph", "eager_loop") if ctx.cuda else ("eager_loop",)):
                    row = {"op": op, "dtype": dname, "numel": N, "log2_numel": e, "row_len": row_len,
                           "min_bytes": nbytes, "n_buffers": nb, "kernels": kern,
                           "out_dtype": str(other).replace("torch.", "") if op == "cast_to_other" else dname,
                           "slope_reuse": ctx.slope_reuse}
                    try:
                        r = ctx.measure(fn, mode=mode, slope_reuse=ctx.slope_reuse)
                        row.update(r)
                        row["gbps_min_bytes"] = nbytes / (r["t_median_us"] * 1e-6) / 1e9
                    except Exception as ex:  # noqa: BLE001
                        row.update(mode=mode, error=f"{type(ex).__name__}: {str(ex)[:300]}")
                    out.add("elementwise", row)
            del X, Y
            if ctx.cuda:
                torch.cuda.empty_cache()
            if ctx.left() < 60:
                log("elementwise: stopping early (budget)")
                return
        last = out.tables["elementwise"][-1]
        log(f"elementwise {dname} done; last {last['op']} n=2^{exps[-1]} {last.get('gbps_min_bytes', 0):.0f} GB/s")


def memcpy_sizes(grid, dry):
    """The byte counts of the memcpy section: 'pow2', 2^10 .. 2^30; 'dense', 2^k and 1.5 x 2^k from 1 KiB to
    2 GiB (2^10 .. 2^31 and 3 x 2^9 .. 3 x 2^29: 43 sizes)."""
    hi = 16 if dry else (31 if grid == "dense" else 30)
    sizes = {1 << e for e in range(10, hi + 1)}
    if grid == "dense":
        sizes |= {3 << (e - 1) for e in range(10, hi)}
    return sorted(sizes)


def cudart_memset(torch):
    """cudaMemsetAsync(ptr, 0, n) on torch's current stream: through the CUDA runtime torch loaded (ctypes;
    the call the emulator also serves), else through cuda.bindings; None if neither is there."""
    try:
        import ctypes

        rt = ctypes.CDLL("libcudart.so.13")

        def memset(ptr, n):
            err = rt.cudaMemsetAsync(ctypes.c_void_p(ptr), 0, ctypes.c_size_t(n),
                                     ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
            if err != 0:
                raise RuntimeError(f"cudaMemsetAsync -> {err}")
        return memset, "ctypes libcudart.so.13"
    except OSError as e:
        log(f"memset via ctypes unavailable: {e}")
    try:
        from cuda.bindings import runtime as rt

        def memset(ptr, n):
            err = rt.cudaMemsetAsync(ptr, 0, n, rt.cudaStream_t(torch.cuda.current_stream().cuda_stream))
            if int(err[0]) != 0:
                raise RuntimeError(f"cudaMemsetAsync -> {err}")
        return memset, "cuda.bindings"
    except Exception as e:  # noqa: BLE001
        log(f"memset via cuda.bindings unavailable: {e}")
    return None, None


def kernel_launches(ctx, fn):
    """(name, grid, block, device us) of the kernels one call of fn launches (torch.profiler's trace)."""
    import tempfile
    from torch.profiler import profile, ProfilerActivity

    fn()
    ctx.sync()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        fn()
        ctx.sync()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.json")
        p.export_chrome_trace(path)
        with open(path) as f:
            ev = json.load(f).get("traceEvents", [])
    return [(e["name"], e.get("args", {}).get("grid"), e.get("args", {}).get("block"), e.get("dur"))
            for e in ev if e.get("cat") == "kernel"]


def sec_memcpy(ctx, out):
    """Copies and memsets by bytes. --memcpy-grid dense: also 1.5 x 2^k sizes up to 2 GiB, pinned H2D/D2H
    inside graphs too, the 4 x inner slope graph on the inner graph's buffers (slope_reuse), --memcpy-passes
    passes over the grid (column `pass`), then the fill kernels' launch keys (table fill_kernels) and probes
    of the captured D2D copies of 512 MiB and 1 GiB (table memcpy_probe)."""
    torch = ctx.torch
    dense = ctx.memcpy_grid == "dense"
    sizes = memcpy_sizes(ctx.memcpy_grid, ctx.dry)
    CAP = sizes[-1]
    u8 = torch.uint8
    pinned = torch.empty(CAP, dtype=u8, pin_memory=ctx.cuda)
    pinned.fill_(1)
    pageable = torch.ones(CAP, dtype=u8)
    dA = torch.ones(CAP, dtype=u8, device=ctx.dev)
    dB = torch.zeros(CAP, dtype=u8, device=ctx.dev)
    memset = None
    if ctx.cuda:
        memset, how = cudart_memset(torch)
        out.summary["memset_via"] = how
    graphed = ("D2D", "fill_zero_torch", "memset_cudart") + (("H2D_pinned", "D2H_pinned") if dense else ())

    def off(j, n):
        span = CAP - n
        return 0 if span <= 0 else ((j * n) % (span + 1)) // 256 * 256

    def cases_of(n):
        cases = {
            "H2D_pinned": lambda j: dA[off(j, n):off(j, n) + n].copy_(pinned[off(j, n):off(j, n) + n], non_blocking=True),
            "H2D_pageable": lambda j: dA[off(j, n):off(j, n) + n].copy_(pageable[off(j, n):off(j, n) + n]),
            "D2H_pinned": lambda j: pinned[off(j, n):off(j, n) + n].copy_(dA[off(j, n):off(j, n) + n], non_blocking=True),
            "D2H_pageable": lambda j: pageable[off(j, n):off(j, n) + n].copy_(dA[off(j, n):off(j, n) + n]),
            "D2D": lambda j: dB[off(j, n):off(j, n) + n].copy_(dA[off(j, n):off(j, n) + n]),
            "fill_zero_torch": lambda j: dB[off(j, n):off(j, n) + n].zero_(),
        }
        if memset is not None:
            cases["memset_cudart"] = lambda j: memset(dB[off(j, n):].data_ptr(), n)
        return cases

    for pss in range(ctx.memcpy_passes):
        for n in sizes:
            e = n.bit_length() - 1
            for name, fn in cases_of(n).items():
                modes = ["eager_loop"]
                if ctx.cuda and name in graphed:
                    modes.append("graph")
                for mode in modes:
                    row = {"op": name, "bytes": n, "log2_bytes": e}
                    if dense:
                        row["pass"] = pss
                    try:
                        r = ctx.measure(fn, mode=mode, max_inner=256, reps=5, slope_reuse=dense)
                        row.update(r)
                        t = r["t_median_us"] * 1e-6
                        row["gbps"] = n / t / 1e9
                        if name == "D2D":
                            row["gbps_read_plus_write"] = 2 * n / t / 1e9
                        if mode == "eager_loop" and "pageable" in name:  # host view: per-call wall time
                            ctx.sync()
                            k = max(1, min(50, r["inner"]))
                            t0 = time.perf_counter()
                            for j in range(k):
                                fn(j)
                            ctx.sync()
                            row["host_wall_us_per_call"] = (time.perf_counter() - t0) / k * 1e6
                    except Exception as ex:  # noqa: BLE001
                        row.update(mode=mode, error=f"{type(ex).__name__}: {str(ex)[:300]}")
                    out.add("memcpy", row)
            if (n & (n - 1)) == 0 and (e % 5 == 0 or n == sizes[-1]):
                log(f"memcpy pass {pss} 2^{e} done")
            if ctx.left() < 40:
                log("memcpy: stopping early (budget)")
                return
        out.write("memcpy")
    if ctx.cuda and dense:
        # the launch key (name, grid, block) of each size's fill kernel, for the profile's kern rows
        for n in sizes:
            try:
                for k, (name, grid, block, dur) in enumerate(kernel_launches(ctx, lambda: dB[:n].zero_())):
                    out.add("fill_kernels", {"op": "fill_zero_torch", "bytes": n, "idx": k, "kernel": name,
                                             "grid": json.dumps(grid), "block": json.dumps(block), "device_us": dur})
            except Exception as ex:  # noqa: BLE001
                out.add("fill_kernels", {"op": "fill_zero_torch", "bytes": n, "error": f"{type(ex).__name__}: {ex}"[:300]})
        out.write("fill_kernels")
        # captured D2D copies of exactly 512 MiB and 1 GiB were 1.65x slower than eager ones (kernels_2026-11-30):
        # a size effect, or the buffers' alignment? Sizes next to them, and the destination moved by 64 KiB
        for n, shift in ((1 << 29, 0), ((1 << 29) - (1 << 20), 0), ((1 << 29) + (1 << 20), 0), (1 << 30, 0),
                         ((1 << 30) - (1 << 20), 0), ((1 << 30) + (1 << 20), 0), (1 << 29, 1 << 16),
                         (1 << 30, 1 << 16), (1 << 31, 0)):
            if n + shift > CAP or ctx.left() < 20:
                continue
            for mode in ("graph", "eager_loop"):
                row = {"op": "D2D", "bytes": n, "dst_shift": shift}
                try:
                    row.update(ctx.measure(lambda j: dB[shift:shift + n].copy_(dA[:n]), mode=mode, max_inner=256,
                                           reps=5, slope_reuse=True))
                except Exception as ex:  # noqa: BLE001
                    row.update(mode=mode, error=f"{type(ex).__name__}: {str(ex)[:300]}")
                out.add("memcpy_probe", row)
        out.write("memcpy_probe")
    if ctx.cuda and memset is not None and not dense:
        try:
            ctx.profile(lambda: memset(dB.data_ptr(), 1 << 24), out, "memcpy", "memset_cudart 16MiB")
            ctx.profile(lambda: dB[: 1 << 24].zero_(), out, "memcpy", "fill_zero_torch 16MiB")
            ctx.profile(lambda: dB[: 1 << 24].copy_(dA[: 1 << 24]), out, "memcpy", "D2D 16MiB")
        except Exception as ex:  # noqa: BLE001
            log(f"memcpy profile failed: {ex}")


def sec_host(ctx, out):
    torch = ctx.torch
    import torch.nn.functional as F
    nlaunch = 1000 if ctx.dry else 10000

    def hrow(metric, value_us, n, note="", **extra):
        out.add("host", {"metric": metric, "value_us": value_us, "n": n, "note": note, **extra})
        log(f"host {metric}: {value_us:.2f} us")

    x = torch.ones(1, device=ctx.dev)
    a = torch.randn(1, 64, device=ctx.dev, dtype=torch.bfloat16)
    wt = torch.randn(64, 64, device=ctx.dev, dtype=torch.bfloat16)
    q = torch.randn(1, 4, 8, 64, device=ctx.dev, dtype=torch.bfloat16)
    loops = {
        "eager_launch_add_inplace_1elem": lambda: x.add_(1),
        "eager_launch_add_alloc_1elem": lambda: x + 1,
        "eager_launch_linear_1x64x64_bf16": lambda: F.linear(a, wt),
        "eager_launch_sdpa_tiny_bf16": lambda: F.scaled_dot_product_attention(q, q, q, is_causal=True),
        "eager_launch_silu_1elem": lambda: F.silu(x),
    }
    for name, fn in loops.items():
        n = nlaunch if "1elem" in name else nlaunch // 5
        per = []
        for _ in range(3):
            for _ in range(50):
                fn()
            ctx.sync()
            t = time.perf_counter()
            for _ in range(n):
                fn()
            ctx.sync()
            per.append((time.perf_counter() - t) / n * 1e6)
        hrow(name, statistics.median(per), n, "perf_counter over n launches + final synchronize; median of 3",
             min_us=min(per), max_us=max(per))

    # synchronize round trip on an idle GPU, and launch + synchronize latency
    for name, fn in (("synchronize_idle", lambda: None), ("launch_then_synchronize", lambda: x.add_(1))):
        ts = []
        for _ in range(2000 if not ctx.dry else 200):
            t = time.perf_counter()
            fn()
            ctx.sync()
            ts.append(time.perf_counter() - t)
        ts.sort()
        hrow(name, statistics.median(ts) * 1e6, len(ts), "median of individually timed calls",
             p10_us=ts[len(ts) // 10] * 1e6, p90_us=ts[9 * len(ts) // 10] * 1e6, mean_us=statistics.mean(ts) * 1e6)

    if ctx.cuda:
        # per-launch GPU time of tiny kernels back to back (eager events), and the graph floor
        start, stop = ctx.timer()
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                x.add_(1)
        torch.cuda.current_stream().wait_stream(s)
        ctx.sync()
        with torch.cuda.graph(g, stream=s):
            for _ in range(100):
                x.add_(1)
        g.replay()
        ctx.sync()
        host = []
        for _ in range(200):
            t = time.perf_counter()
            g.replay()
            host.append(time.perf_counter() - t)
        ctx.sync()
        host.sort()
        hrow("graph_replay_host_100_tiny_kernels", statistics.median(host) * 1e6, 200,
             "perf_counter around g.replay() (no sync); median", p90_us=host[180] * 1e6)
        dev = []
        for _ in range(20):
            start()
            g.replay()
            dev.append(stop())
        hrow("graph_replay_device_per_kernel_100_tiny", statistics.median(dev) / 100 * 1e6, 20,
             "CUDA events around one replay of 100 add_ kernels on 1 element, /100: in-graph launch floor",
             replay_total_us=statistics.median(dev) * 1e6)
        dev = []
        for _ in range(20):
            start()
            for _ in range(100):
                g.replay()
            dev.append(stop())
        hrow("graph_replay_device_per_replay_back_to_back", statistics.median(dev) / 100 * 1e6, 2000,
             "events around 100 back-to-back replays of the 100-kernel graph, per replay")
        # event-timed eager tiny kernels (device view of the eager loop)
        dev = []
        for _ in range(5):
            start()
            for _ in range(1000):
                x.add_(1)
            dev.append(stop())
        hrow("eager_loop_device_per_launch_add_inplace", statistics.median(dev) / 1000 * 1e6, 5000,
             "CUDA events around 1000 eager add_ launches, per launch (launch-bound)")
        del g
    py = python_host_bench()
    out.summary["python_host_bench"] = {"result": py, "cpu": cpu_info()}
    for k, v in py.items():
        hrow("python_" + k, v["median_s"] * 1e6, v["reps"], "pure Python on the GPU host; median")


def sec_e2e(ctx, out, layers_list):
    torch = ctx.torch
    from transformers import LlamaConfig, LlamaForCausalLM, LogitsProcessor, LogitsProcessorList

    class StepClock(LogitsProcessor):
        def __init__(self):
            self.t = []

        def __call__(self, input_ids, scores):
            self.t.append(time.perf_counter())
            return scores

    for layers in layers_list:
        if ctx.left() < (25 if layers <= 4 else 60):
            log(f"e2e {layers} layers skipped (budget)")
            out.add("e2e", {"model": f"llama3-8b-shape-{layers}L", "phase": "skipped", "error": "budget"})
            continue
        if ctx.dry:
            cfg = LlamaConfig(vocab_size=1000, hidden_size=256, intermediate_size=512, num_hidden_layers=layers,
                              num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=2048)
        else:
            cfg = LlamaConfig(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=layers,
                              num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=8192,
                              rope_theta=500000.0, rms_norm_eps=1e-5, tie_word_embeddings=False,
                              bos_token_id=128000, eos_token_id=None)
        t = time.perf_counter()
        prev = torch.get_default_dtype()
        torch.set_default_dtype(torch.bfloat16)
        try:
            with ctx.dev:
                model = LlamaForCausalLM(cfg)
        finally:
            torch.set_default_dtype(prev)
        model = model.to(device=ctx.dev, dtype=torch.bfloat16).eval()
        model.generation_config.eos_token_id = None
        ctx.sync()
        name = f"llama3-8b-shape-{layers}L"
        nparam = sum(p.numel() for p in model.parameters())
        attn = getattr(model.config, "_attn_implementation", None)
        log(f"e2e {name}: built in {time.perf_counter() - t:.1f}s, {nparam / 1e9:.2f}B params, attn={attn}")
        common = {"model": name, "layers": layers, "params": nparam, "attn_impl": attn}
        start, stop = ctx.timer()
        V = cfg.vocab_size
        shapes = [(1, 16), (2, 32)] if ctx.dry else ([(1, 128), (1, 512), (1, 2048), (8, 512)] if layers <= 4
                                                     else [(1, 512), (1, 2048), (8, 512)])
        with torch.inference_mode():
            for (b, s) in shapes:
                ids = torch.randint(0, V, (b, s), device=ctx.dev)
                for _ in range(2):
                    model(input_ids=ids, use_cache=False)
                ctx.sync()
                ev, wall = [], []
                for _ in range(5):
                    t0 = time.perf_counter()
                    start()
                    model(input_ids=ids, use_cache=False)
                    ev.append(stop())
                    wall.append(time.perf_counter() - t0)
                out.add("e2e", dict(common, phase="prefill_forward", batch=b, prompt_len=s, reps=5,
                                    event_median_ms=statistics.median(ev) * 1e3, event_min_ms=min(ev) * 1e3,
                                    wall_median_ms=statistics.median(wall) * 1e3, wall_min_ms=min(wall) * 1e3,
                                    event_ms_list=[round(v * 1e3, 4) for v in ev],
                                    wall_ms_list=[round(v * 1e3, 4) for v in wall],
                                    note="model(input_ids, use_cache=False), all-position logits; events + "
                                         "perf_counter with synchronize"))
                log(f"e2e {name} prefill b={b} s={s}: {statistics.median(ev) * 1e3:.2f} ms (events)")
            # decode step: forward of 1 token against a cache of P tokens
            P = 16 if ctx.dry else 512
            ids = torch.randint(0, V, (1, P), device=ctx.dev)
            o = model(input_ids=ids, use_cache=True)
            pkv = o.past_key_values
            nxt = o.logits[:, -1:].argmax(-1)
            for _ in range(3):
                model(input_ids=nxt, past_key_values=pkv, use_cache=True)
            ctx.sync()
            ev, wall = [], []
            for _ in range(30):
                t0 = time.perf_counter()
                start()
                model(input_ids=nxt, past_key_values=pkv, use_cache=True)
                ev.append(stop())
                wall.append(time.perf_counter() - t0)
            out.add("e2e", dict(common, phase="decode_step", batch=1, prompt_len=P, reps=30,
                                event_median_ms=statistics.median(ev) * 1e3, event_min_ms=min(ev) * 1e3,
                                wall_median_ms=statistics.median(wall) * 1e3, wall_min_ms=min(wall) * 1e3,
                                event_ms_list=[round(v * 1e3, 4) for v in ev],
                                wall_ms_list=[round(v * 1e3, 4) for v in wall],
                                note=f"one-token forward with DynamicCache of ~{P}+ tokens (grows by 1 per rep)"))
            log(f"e2e {name} decode step: {statistics.median(ev) * 1e3:.2f} ms (events), "
                f"{statistics.median(wall) * 1e3:.2f} ms wall")
            try:
                ctx.profile(lambda: model(input_ids=ids, use_cache=False), out, "e2e", f"{name} prefill b=1 s={P}")
                ctx.profile(lambda: model(input_ids=nxt, past_key_values=pkv, use_cache=True), out, "e2e",
                            f"{name} decode_step cache~{P}")
            except Exception as ex:  # noqa: BLE001
                log(f"e2e profile failed: {ex}")
            del pkv, o
            # generate: 64 new tokens, greedy
            NEW = 8 if ctx.dry else 64
            mask = torch.ones_like(ids)
            for rep in range(6):
                clk = StepClock()
                ctx.sync()
                t0 = time.perf_counter()
                g = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=NEW, min_new_tokens=NEW,
                                   do_sample=False, eos_token_id=None, pad_token_id=0,
                                   logits_processor=LogitsProcessorList([clk]))
                ctx.sync()
                t1 = time.perf_counter()
                steps = [b - a for a, b in zip(clk.t, clk.t[1:])]
                out.add("e2e", dict(common, phase="generate" if rep else "generate_warmup", batch=1, prompt_len=P,
                                    new_tokens=int(g.shape[1] - P), wall_ms=(t1 - t0) * 1e3,
                                    ttft_host_ms=(clk.t[0] - t0) * 1e3 if clk.t else None,
                                    step_median_ms=statistics.median(steps) * 1e3 if steps else None,
                                    step_times_ms=[round(s_ * 1e3, 4) for s_ in steps],
                                    note="generate(greedy, min=max=new tokens, eos None); perf_counter with "
                                         "synchronize; ttft_host = time to first logits-processor call; steps = "
                                         "gaps between logits-processor calls"))
                log(f"e2e {name} generate rep{rep}: {(t1 - t0) * 1e3:.1f} ms for {g.shape[1] - P} tokens")
        del model
        if ctx.cuda:
            torch.cuda.empty_cache()


# ----------------------------------------------------------------------------------------------------------

SECTIONS = ["host", "gemm_main", "elementwise", "memcpy", "sdpa", "e2e4", "gemm_extra", "e2e32", "gemm_models"]


def headline(out):
    h = {}
    try:
        g = out.tables.get("gemm", [])
        for r in g:
            if r.get("tag") == "cube" and r.get("m") == 8192 and "tflops" in r:
                h[f"{r['dtype']}_matmul_8192cubed_tflops"] = round(r["tflops"], 1)
        for r in g:
            if r.get("op") == "linear" and r.get("dtype") == "bf16" and r.get("mode") == "graph" and "tflops" in r:
                if (r["m"], r["n"], r["k"]) == (1, 4096, 4096):
                    h["bf16_linear_m1_4096x4096_us"] = round(r["t_median_us"], 2)
                    h["bf16_linear_m1_4096x4096_weight_GBps"] = round(r["gbps_min_bytes"], 0)
                if (r["m"], r["n"], r["k"]) == (1, 128256, 4096):
                    h["bf16_linear_m1_lmhead_weight_GBps"] = round(r["gbps_min_bytes"], 0)
        m = out.tables.get("memcpy", [])
        for r in m:
            if r.get("bytes") == 1 << 30 and "gbps" in r:
                key = f"{r['op']}_1GiB_{r['mode']}_GBps"
                h[key] = round(r.get("gbps_read_plus_write", r["gbps"]), 1)
        e = out.tables.get("elementwise", [])
        small = [r for r in e if r.get("numel") == 1024 and r.get("mode") == "graph" and "t_median_us" in r]
        if small:
            h["graph_floor_smallest_elementwise_us_min_over_ops"] = round(min(r["t_median_us"] for r in small), 2)
            h["graph_floor_add_bf16_1024_us"] = round(
                next((r["t_median_us"] for r in small if r["op"] == "add" and r["dtype"] == "bf16"), float("nan")), 2)
        for r in out.tables.get("host", []):
            if r["metric"].startswith("probe_"):
                h.setdefault("host_probe_launch_us_by_section", {})[r["after_section"]] = round(r["value_us"], 2)
            else:
                h["host_" + r["metric"] + "_us"] = round(r["value_us"], 3)
        for r in out.tables.get("e2e", []):
            if r.get("phase") in ("prefill_forward", "decode_step") and (r.get("prompt_len") in (512, 16)) \
                    and r.get("batch") == 1:
                h[f"{r['model']}_{r['phase']}_ms"] = round(r["event_median_ms"], 3)
            if r.get("phase") == "generate":
                h[f"{r['model']}_generate64_wall_ms"] = round(r["wall_ms"], 1)
    except Exception as ex:  # noqa: BLE001
        h["error"] = str(ex)
    out.summary["headline"] = h
    return h


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--dry-run", action="store_true", help="tiny sizes on the CPU, to check the logic")
    ap.add_argument("--host-only", action="store_true", help="only the pure-Python host-speed bench (JSON)")
    ap.add_argument("--budget", type=float, default=420.0, help="seconds of wall time for the whole run")
    ap.add_argument("--sections", default=",".join(SECTIONS))
    ap.add_argument("--graph-slope", action="store_true",
                    help="graph rows also measure 4 x inner nodes: node_us (per-node device time without the "
                         "per-replay cost), replay_fixed_us (that cost, GPU idle at launch) and "
                         "replay_fixed_busy_us (GPU busy at launch)")
    ap.add_argument("--memcpy-grid", choices=("pow2", "dense"), default="pow2",
                    help="memcpy sizes: powers of two 1 KiB-1 GiB, or 'dense' (also 1.5 x 2^k, up to 2 GiB, pinned "
                         "copies in graphs too, the slope graph on the same buffers; sec_memcpy)")
    ap.add_argument("--cool-ms", type=float, default=0.0,
                    help="idle this long (150; the H200 restores its full clock after 30 ms) before a timed "
                         "repetition that would end more than 25 ms of work after the last cool-down, then warm "
                         "up untimed: every row at full clock (Ctx.cool). 0: back to back, as before")
    ap.add_argument("--cool-sections", default=None,
                    help="the sections --cool-ms applies to (default: all)")
    ap.add_argument("--names", choices=("budget", "subset"), default="budget",
                    help="GEMM kernel names (torch.profiler) for every shape while the budget is comfortable, "
                         "or only for the fixed subset PROFILE_GEMM")
    ap.add_argument("--memcpy-passes", type=int, default=1, help="passes over the memcpy grid (column `pass`)")
    ap.add_argument("--no-profile", action="store_true",
                    help="elementwise section: no torch.profiler session (CUPTI slows the later graph nodes)")
    ap.add_argument("--slope-reuse", action="store_true",
                    help="the elementwise section's 4 x inner slope graph on the inner graph's buffers (slope_reuse; "
                         "column `slope_reuse`), as the dense memcpy grid does")
    args = ap.parse_args()

    if args.host_only:
        os.makedirs(args.outdir, exist_ok=True)
        res = {"cpu": cpu_info(), "result": python_host_bench(),
               "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
        with open(os.path.join(args.outdir, "python_host_bench.json"), "w") as f:
            json.dump(res, f, indent=1)
        print(json.dumps(res, indent=1))
        return

    prov = provenance(args)
    out = Out(args.outdir, prov)
    log(f"provenance: {json.dumps({k: v for k, v in prov.items() if k != 'packages'})}")
    ctx = Ctx(args)
    torch = ctx.torch
    if ctx.cuda:
        torch.ones(1, device="cuda")
        torch.cuda.synchronize()
        prov["cublas"] = cublas_version()
        prov["loaded_cuda_libs"] = loaded_libs()
        out.summary["clocks"].append({"after": "start", **gpu_clocks()})
    out.write_summary()
    wanted = args.sections.split(",")
    runners = {
        "host": lambda: sec_host(ctx, out),
        "gemm_main": lambda: sec_gemm_main(ctx, out),
        "elementwise": lambda: sec_elementwise(ctx, out),
        "memcpy": lambda: sec_memcpy(ctx, out),
        "sdpa": lambda: sec_sdpa(ctx, out),
        "e2e4": lambda: sec_e2e(ctx, out, [2 if ctx.dry else 4]),
        "gemm_extra": lambda: sec_gemm_extra(ctx, out),
        "e2e32": lambda: sec_e2e(ctx, out, [3 if ctx.dry else 32]),
        "gemm_models": lambda: sec_gemm_models(ctx, out),
    }
    for name in SECTIONS:
        if name in wanted:
            section(name, out, ctx, runners[name])
    if ctx.cuda:  # loaded libraries again: cuDNN etc. load lazily
        prov["loaded_cuda_libs"] = loaded_libs()
    h = headline(out)
    out.summary["total_seconds"] = round(time.perf_counter() - T0, 1)
    for t in list(out.tables):
        out.write(t)
    out.write_summary()
    log("HEADLINE " + json.dumps(h, indent=0))
    for t, rows in out.tables.items():
        errs = sum(1 for r in rows if r.get("error"))
        log(f"table {t}: {len(rows)} rows, {errs} with error")
    log(f"total {time.perf_counter() - T0:.1f}s")


if __name__ == "__main__":
    main()
