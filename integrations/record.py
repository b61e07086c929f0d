"""Record what a Python program really runs on a GPU: one row per kernel, copy and memset, keyed like the
emulator's launch records.

    python -m timewarp.integrations.record [--out DIR] [options] -- script.py ARGS...
    python -m timewarp.integrations.record [--out DIR] [options] -- -m package.module ARGS...
    python -m integrations.record ...            (from a checkout: the module needs only torch and pyarrow)
    python path/to/integrations/record.py ...    (by path, likewise)

The program runs unmodified in this process (runpy, as `python script.py` would run it, with sys.argv and
sys.path[0] set the same way) under torch.profiler with CUDA activity (CUPTI, through kineto) and
record_shapes=True. At the end the profiler's Chrome trace is exported and parsed, because that JSON carries
everything needed and its layout is kineto's (stable across torch releases), unlike the Python-side
FunctionEvents:

  - GPU activities (cat "kernel", "gpu_memcpy", "gpu_memset"): name, ts/dur (ns precision), and args
    {"grid", "block", "shared memory", "registers per thread", "stream", "device", "correlation",
    "External id", "graph id"/"graph node id" (replays of CUDA graphs), "bytes" (copies, memsets)};
  - the host API call that launched each one (cat "cuda_runtime" or "cuda_driver": cudaLaunchKernel,
    cudaLaunchKernelExC, cuLaunchKernel(Ex) from Triton, cudaMemcpyAsync, cudaMemsetAsync, cudaGraphLaunch),
    joined on the CUPTI correlation id; its duration is the per-launch host cost;
  - the aten operator that launched it (cat "cpu_op"), joined on kineto's "External id" (the innermost
    operator open on that thread when the launch was made), with its "Input Dims", "Input type" and
    "Concrete Inputs" (record_shapes); the outermost operator open at that moment (top_op, e.g. aten::linear
    over aten::mm); and the innermost torch.profiler.record_function span (cat "user_annotation"), which a
    workload uses to label its cases.

Outputs in DIR:
  kernels.parquet   one row per GPU activity (columns below), in start order
  runtime.parquet   one row per CUDA runtime/driver API call seen (launches, copies, syncs, ...): host costs
  summary.json      provenance, counts, the profiler-overhead probe, the program's exit status
  trace.json.gz     the raw Chrome trace, with --keep-trace
Both parquet files carry the provenance as schema metadata under the key `timewarp_provenance` (JSON).

kernels.parquet columns:
  idx, kind (kernel | memcpy | memset), name (as the trace gives it: kineto demangles CUPTI's mangled names
  with abi::__cxa_demangle and keeps the raw name where that fails), mangled_name (the raw name where it can
  be known without the binary: equal to name for extern "C" kernels such as Triton's, cuBLAS's nvjet_*
  and cuDNN's generated ones, and for names starting with _Z that did not demangle; null for demangled C++
  names), family (a coarse class from the name), grid_x..z, block_x..z, shared_mem_bytes (CUPTI's static +
  dynamic shared memory: kineto reports only their sum), registers_per_thread, occupancy_pct (kineto's
  estimate), device, stream, context, correlation, graph_id, graph_node_id, start_ns (from the first event of
  the trace), dur_ns, bytes, copy_kind (HtoD, DtoH, DtoD, HtoH, PtoP), src_mem / dst_mem (Pageable, Pinned,
  Device, ...), pinned (the host side of a HtoD/DtoH copy is page-locked), launch_api, launch_api_start_ns,
  launch_api_dur_ns (host time inside that call), launch_tid, launch_to_start_ns (kernel start minus the
  launch call's start: queueing plus launch latency), launch_group_size (GPU activities sharing that call: >1
  for a graph launch), op_name, op_external_id, op_input_dims, op_input_types, op_concrete_inputs (JSON
  strings), top_op_name, top_op_input_dims, label (innermost record_function name around the launch call),
  label_stack (JSON list of the record_function names open around it, outermost first: libraries add their
  own, e.g. Inductor's "## Call CompiledFxGraph ..." inside a workload's label).
  Kernels replayed from a CUDA graph have launch_api = cudaGraphLaunch, one correlation for the whole replay
  (launch_group_size = its GPU activities) and no op_name; graph_id/graph_node_id stay null where kineto does
  not export them (torch 2.11 does not).

Matching the emulator's records (shim_c/core/trace.c: name = mangled kernel name, args grid/block; the launch
also carries its dynamic shared memory): demangle the emulator's name with abi::__cxa_demangle (status 0 ->
the demangled string, else the name unchanged, exactly what kineto does) and compare with `name`; compare
grid and block as triples; compare the emulator's static (cuFuncGetAttribute SHARED_SIZE_BYTES, i.e.
tw_kernel.shared_bytes) plus dynamic shared memory with `shared_mem_bytes`.

Long programs: the whole run is profiled by default. kineto keeps every event in memory until the end and
CUPTI's activity buffers are capped (kineto's default is a few hundred MB, several hundred thousand
kernels); past that, activities are dropped. Use --delay/--duration to profile a window of the run (started and
stopped from a SIGALRM handler on the main thread, so the program needs no step() calls; programs that use
SIGALRM themselves cannot use it), and --max-rows to cap the rows written (the first rows in start order are
kept; summary.json says how many were dropped). Or let the program mark its own window: the recorder puts a
module `timewarp_record_window` in sys.modules, whose start() and stop() open and close the one profiled window
(no-ops once done; without the recorder the module is absent), and --window program keeps the recorder from
opening it by itself: `w = sys.modules.get("timewarp_record_window"); w and w.start()`.

Overhead: CUPTI activity tracing and record_shapes make every launch cost more on the host, and the GPU
timestamps carry a small per-kernel cost. Unless --no-probe, the recorder measures both, on the same GPU,
before the program (unprofiled) and at the start of the profiled window: summary.json["probe"].
"""
from __future__ import annotations

import argparse
import datetime
import gzip
import json
import logging
import math
import os
import platform
import re
import runpy
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

log = logging.getLogger(__name__)

PROBE_LABEL = "timewarp.record:probe"
GPU_CATS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
API_CATS = {"cuda_runtime", "cuda_driver"}

KERNEL_COLUMNS = [
    "idx", "kind", "name", "mangled_name", "family", "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z",
    "shared_mem_bytes", "registers_per_thread", "occupancy_pct", "device", "stream", "context", "correlation",
    "graph_id", "graph_node_id", "start_ns", "dur_ns", "bytes", "copy_kind", "src_mem", "dst_mem", "pinned",
    "launch_api", "launch_api_start_ns", "launch_api_dur_ns", "launch_tid", "launch_to_start_ns",
    "launch_group_size", "op_name", "op_external_id", "op_input_dims", "op_input_types", "op_concrete_inputs",
    "top_op_name", "top_op_input_dims", "label", "label_stack",
]
RUNTIME_COLUMNS = ["name", "cat", "tid", "start_ns", "dur_ns", "correlation", "external_id", "n_gpu_activities",
                   "op_name", "top_op_name", "label", "label_stack"]


# ------------------------------------------------------------------------------------------------ parsing

def _ns(v) -> int | None:
    """A kineto timestamp/duration in µs (JSON number kept as its text, see _load_trace) -> integer ns.
    Split at the point rather than multiply a float: 16-digit µs timestamps lose the last ns in a double."""
    if v is None:
        return None
    if isinstance(v, (int,)):
        return v * 1000
    s = str(v)
    if "e" in s or "E" in s:
        return int(round(float(s) * 1000))
    neg = s.startswith("-")
    if neg:
        s = s[1:]
    whole, _, frac = s.partition(".")
    ns = int(whole or 0) * 1000 + int((frac + "000")[:3])
    return -ns if neg else ns


def _num(v):
    """A JSON number kept as text -> int or float; anything else unchanged."""
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return v
    return v


def _int(v):
    v = _num(v)
    if isinstance(v, float):
        return int(v)
    return v if isinstance(v, int) else None


def _load_trace(path: str) -> dict:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        # floats stay text so that ts/dur convert to ns exactly (_ns); other floats go through _num
        return json.load(f, parse_float=lambda s: s)


_PLAIN_ID = re.compile(r"^[A-Za-z_][A-Za-z0-9_$.]*$")
_MEMCPY = re.compile(r"^Memcpy\s+(\w+)\s*(?:\((\w+)\s*->\s*(\w+)\))?")


def mangled_from_name(name: str) -> str | None:
    """The raw (mangled) symbol where the reported name must be it: an extern "C" identifier or a _Z name
    that did not demangle. None for demangled C++ names (the raw name is not recoverable from the trace)."""
    if name.startswith("_Z") or _PLAIN_ID.match(name):
        return name
    return None


def kernel_family(name: str, kind: str) -> str:
    """A coarse class of the kernel, from its name (for counting and grouping, not a key)."""
    if kind != "kernel":
        return kind
    n = name
    low = n.lower()
    if n.startswith("triton_") or low.startswith("triton"):
        return "triton"
    if "nvjet" in low:
        return "cublas_nvjet"
    if "cudnn" in low or "fort_native_sdpa" in low:
        return "cudnn"
    if "flash" in low and ("fwd" in low or "fprop" in low or "flash::" in n):
        return "flash_attention"
    if "fmha" in low or "attention" in low or "mem_eff" in low:
        return "attention"
    if "splitkreduce" in low or "gemv" in low or "gemm" in low or "cublas" in low or "sm90_xmma" in low \
            or "cutlass" in low or "ampere_" in low or "sm80_xmma" in low:
        return "gemm_other"
    if "reduce_kernel" in n or "reduce" in low and "at::native" in n:
        return "reduce"
    if "softmax" in low:
        return "softmax"
    if "rms_norm" in low or "layer_norm" in low or "layernorm" in low or "rmsnorm" in low:
        return "norm"
    if "index" in low or "gather" in low or "scatter" in low or "embedding" in low:
        return "index"
    if "cat" in low and ("CatArray" in n or "cat_" in low):
        return "cat"
    if "elementwise" in low or "unrolled_elementwise" in low:
        return "elementwise"
    if "fill" in low:
        return "fill"
    if "copy" in low:
        return "copy"
    if "distribution" in low or "philox" in low or "curand" in low or "normal" in low:
        return "random"
    if "sort" in low or "radix" in low or "topk" in low or "scan" in low:
        return "sort_scan"
    if "nccl" in low:
        return "nccl"
    if "at::native" in n:
        return "aten_other"
    return "other"


class _Spans:
    """Properly nested [start, end) spans per thread; for a time on a thread: the innermost and the outermost
    span open at that time. Kineto rounds, so a span that ends exactly at t still counts as open."""

    def __init__(self, spans):  # spans: iterable of (tid, start_ns, end_ns, payload)
        self.by_tid = {}
        for tid, s, e, p in spans:
            self.by_tid.setdefault(tid, []).append((s, -e, e, p))
        for v in self.by_tid.values():
            v.sort(key=lambda x: (x[0], x[1]))

    def lookup(self, queries):
        """queries: list of (tid, t_ns, key). Returns {key: [payloads of the spans open at t, outermost first]}."""
        out = {}
        qs = {}
        for tid, t, key in queries:
            qs.setdefault(tid, []).append((t, key))
        for tid, ql in qs.items():
            spans = self.by_tid.get(tid, [])
            ql.sort(key=lambda x: x[0])
            stack = []  # (end, payload)
            i = 0
            for t, key in ql:
                while i < len(spans) and spans[i][0] <= t:
                    s, _, e, p = spans[i]
                    while stack and stack[-1][0] < s:
                        stack.pop()
                    stack.append((e, p))
                    i += 1
                while stack and stack[-1][0] < t:
                    stack.pop()
                # spans left below a popped one that have also ended (improper nesting) are skipped
                out[key] = [p for e, p in stack if e >= t]
        return out


def _js(v):
    return None if v is None else json.dumps(v, separators=(",", ":"))


def parse_trace(trace: dict, max_rows: int | None = None) -> tuple[list[dict], list[dict], dict]:
    """Chrome trace (as _load_trace returns it) -> (kernel rows, runtime rows, counts)."""
    events = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X"]
    t0 = None
    for e in events:
        ts = _ns(e.get("ts"))
        e["_ts"] = ts
        e["_dur"] = _ns(e.get("dur")) or 0
        if ts is not None and (t0 is None or ts < t0):
            t0 = ts
    t0 = t0 or 0

    gpu, apis, ops, annos = [], [], [], []
    other_cats = {}
    for e in events:
        cat = str(e.get("cat", "")).lower()
        if cat in GPU_CATS:
            gpu.append(e)
        elif cat in API_CATS:
            apis.append(e)
        elif cat == "cpu_op":
            ops.append(e)
        elif cat == "user_annotation":
            annos.append(e)
        else:
            other_cats[cat] = other_cats.get(cat, 0) + 1

    ops_by_ext = {}
    for e in ops:
        x = _int((e.get("args") or {}).get("External id"))
        if x is not None:
            ops_by_ext.setdefault(x, e)
    api_by_corr = {}
    for e in apis:
        c = _int((e.get("args") or {}).get("correlation"))
        if c is not None:
            # one correlation id per API call; keep the first if a trace repeats it
            api_by_corr.setdefault(c, e)
    n_by_corr = {}
    for e in gpu:
        c = _int((e.get("args") or {}).get("correlation"))
        if c is not None:
            n_by_corr[c] = n_by_corr.get(c, 0) + 1

    op_spans = _Spans((e.get("tid"), e["_ts"], e["_ts"] + e["_dur"], e) for e in ops)
    anno_spans = _Spans((e.get("tid"), e["_ts"], e["_ts"] + e["_dur"], e) for e in annos)
    queries = [(e.get("tid"), e["_ts"], id(e)) for e in apis]
    op_ctx = op_spans.lookup(queries)
    anno_ctx = anno_spans.lookup(queries)

    def ctx_of(api):
        """(innermost op, outermost op, innermost label, label stack JSON) around an API call."""
        ops_open = op_ctx.get(id(api)) or []
        annos_open = anno_ctx.get(id(api)) or []
        return (ops_open[-1] if ops_open else None, ops_open[0] if ops_open else None,
                annos_open[-1].get("name") if annos_open else None,
                _js([a.get("name") for a in annos_open]) if annos_open else None)

    gpu.sort(key=lambda e: (e["_ts"], e["_dur"]))
    total_gpu = len(gpu)
    if max_rows is not None and len(gpu) > max_rows:
        gpu = gpu[:max_rows]

    rows = []
    for i, e in enumerate(gpu):
        a = e.get("args") or {}
        kind = GPU_CATS[str(e.get("cat")).lower()]
        name = str(e.get("name", ""))
        grid = a.get("grid") or [None] * 3
        block = a.get("block") or [None] * 3
        corr = _int(a.get("correlation"))
        api = api_by_corr.get(corr) if corr is not None else None
        ext = _int(a.get("External id"))
        if (ext is None or ext not in ops_by_ext) and api is not None:
            ext = _int((api.get("args") or {}).get("External id"))
        op = ops_by_ext.get(ext) if ext is not None else None
        inner = outer = label = label_stack = None
        if api is not None:
            inner, outer, label, label_stack = ctx_of(api)
        if op is None:
            op = inner
        oa = (op or {}).get("args") or {}
        ta = (outer or {}).get("args") or {}
        row = dict.fromkeys(KERNEL_COLUMNS)
        row.update(
            idx=i, kind=kind, name=name, mangled_name=mangled_from_name(name) if kind == "kernel" else None,
            family=kernel_family(name, kind),
            device=_int(a.get("device")), stream=_int(a.get("stream")), context=_int(a.get("context")),
            correlation=corr, graph_id=_int(a.get("graph id")), graph_node_id=_int(a.get("graph node id")),
            start_ns=e["_ts"] - t0, dur_ns=e["_dur"], label=label, label_stack=label_stack,
            op_name=(op or {}).get("name"), op_external_id=_int(oa.get("External id")),
            op_input_dims=_js(oa.get("Input Dims")), op_input_types=_js(oa.get("Input type")),
            op_concrete_inputs=_js(oa.get("Concrete Inputs")),
            top_op_name=(outer or {}).get("name"), top_op_input_dims=_js(ta.get("Input Dims")),
        )
        if kind == "kernel":
            row.update(grid_x=_int(grid[0]), grid_y=_int(grid[1]), grid_z=_int(grid[2]),
                       block_x=_int(block[0]), block_y=_int(block[1]), block_z=_int(block[2]),
                       shared_mem_bytes=_int(a.get("shared memory")),
                       registers_per_thread=_int(a.get("registers per thread")),
                       occupancy_pct=_num(a.get("est. achieved occupancy %")))
            occ = row["occupancy_pct"]
            row["occupancy_pct"] = float(occ) if isinstance(occ, (int, float)) and math.isfinite(occ) else None
        else:
            row["bytes"] = _int(a.get("bytes"))
            if kind == "memcpy":
                m = _MEMCPY.match(name)
                if m:
                    row["copy_kind"], row["src_mem"], row["dst_mem"] = m.group(1), m.group(2), m.group(3)
                    host = {"HtoD": m.group(2), "DtoH": m.group(3)}.get(m.group(1))
                    if host:
                        row["pinned"] = host.lower() == "pinned"
        if api is not None:
            row.update(launch_api=api.get("name"), launch_api_start_ns=api["_ts"] - t0,
                       launch_api_dur_ns=api["_dur"], launch_tid=_int(api.get("tid")),
                       launch_to_start_ns=e["_ts"] - api["_ts"], launch_group_size=n_by_corr.get(corr))
        rows.append(row)

    rt_rows = []
    for e in sorted(apis, key=lambda e: e["_ts"]):
        a = e.get("args") or {}
        corr = _int(a.get("correlation"))
        inner, outer, label, label_stack = ctx_of(e)
        ext = _int(a.get("External id"))
        op = ops_by_ext.get(ext) if ext is not None else None
        rt_rows.append({
            "name": e.get("name"), "cat": e.get("cat"), "tid": _int(e.get("tid")), "start_ns": e["_ts"] - t0,
            "dur_ns": e["_dur"], "correlation": corr, "external_id": ext,
            "n_gpu_activities": n_by_corr.get(corr, 0) if corr is not None else 0,
            "op_name": (op or inner or {}).get("name"), "top_op_name": (outer or {}).get("name"),
            "label": label, "label_stack": label_stack,
        })

    overhead = {}
    for e in events:
        if str(e.get("cat", "")).lower() == "overhead":
            o = overhead.setdefault(str(e.get("name")), {"n": 0, "total_ns": 0})
            o["n"] += 1
            o["total_ns"] += e["_dur"]
    counts = {"events": len(events), "gpu_activities": total_gpu, "gpu_rows_written": len(rows),
              "gpu_rows_dropped": total_gpu - len(rows), "api_calls": len(apis), "cpu_ops": len(ops),
              "user_annotations": len(annos), "other_categories": other_cats, "profiler_overhead_events": overhead,
              "base_time_ns": _int(trace.get("baseTimeNanoseconds")), "first_event_ts_ns": t0}
    return rows, rt_rows, counts


# ------------------------------------------------------------------------------------------------ provenance

def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _loaded_cuda_libs() -> list[str]:
    libs = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                p = line.split()[-1]
                if any(k in p for k in ("libcublas", "libcudnn.so", "libcudart", "libcupti", "libnvrtc",
                                        "libcuda.so", "libnccl")):
                    libs.add(p)
    except OSError:
        pass
    return sorted(libs)


def _cublas_version(libs) -> int | None:
    import ctypes
    cands = [p for p in libs if "libcublasLt" in p] + ["libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"]
    for name in cands:
        try:
            lib = ctypes.CDLL(name)
            lib.cublasLtGetVersion.restype = ctypes.c_size_t
            return int(lib.cublasLtGetVersion())
        except (OSError, AttributeError):
            continue
    return None


def _driver_version() -> str | None:
    try:
        import pynvml  # nvidia-ml-py
        pynvml.nvmlInit()
        v = pynvml.nvmlSystemGetDriverVersion()
        return v.decode() if isinstance(v, bytes) else v
    except Exception:  # noqa: BLE001
        pass
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=10)
        return r.stdout.strip().splitlines()[0] if r.stdout.strip() else None
    except Exception:  # noqa: BLE001
        return None


def _gpu_clocks() -> str | None:
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw,"
                            "clocks_throttle_reasons.active", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=10)
        return r.stdout.strip() or None
    except Exception:  # noqa: BLE001
        return None


def provenance(command: list[str]) -> dict:
    prov = {"run_date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": " ".join(command), "python": sys.version.split()[0], "platform": platform.platform(),
            "host_cpu": _cpu_model(), "nproc": os.cpu_count(), "hostname": socket.gethostname()}
    try:
        import torch
        prov["torch"] = torch.__version__
        prov["cuda"] = torch.version.cuda
        prov["cudnn"] = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
        if torch.cuda.is_available():
            p = torch.cuda.get_device_properties(0)
            prov.update(gpu_name=p.name, cc=f"{p.major}.{p.minor}", sm_count=p.multi_processor_count,
                        gpu_mem_bytes=p.total_memory, l2_bytes=getattr(p, "L2_cache_size", None),
                        device_count=torch.cuda.device_count())
        else:
            prov["gpu_name"] = None
    except Exception as e:  # noqa: BLE001
        prov["torch_error"] = repr(e)
    libs = _loaded_cuda_libs()
    prov["cuda_libs_loaded"] = libs
    prov["cublaslt_version"] = _cublas_version(libs) if prov.get("gpu_name") else None
    prov["driver"] = _driver_version() if prov.get("gpu_name") else None
    prov["gpu_clocks_at_end"] = _gpu_clocks() if prov.get("gpu_name") else None
    try:
        import importlib.metadata as md
        vers = {}
        for d in md.distributions():
            n = (d.metadata["Name"] or "").lower()
            if n.startswith("nvidia-") or n in ("torch", "triton", "transformers", "pyarrow", "numpy"):
                vers[n] = d.version
        prov["packages"] = dict(sorted(vers.items()))
    except Exception as e:  # noqa: BLE001
        prov["packages_error"] = repr(e)
    return prov


# ------------------------------------------------------------------------------------------------ output

_STR = {"kind", "name", "mangled_name", "family", "copy_kind", "src_mem", "dst_mem", "launch_api", "op_name",
        "op_input_dims", "op_input_types", "op_concrete_inputs", "top_op_name", "top_op_input_dims", "label",
        "label_stack", "cat"}
_FLOAT = {"occupancy_pct"}
_BOOL = {"pinned"}


def _schema(columns):
    """Fixed column types (also for an empty table): strings, one float, one bool, the rest int64."""
    import pyarrow as pa
    return pa.schema([(c, pa.string() if c in _STR else pa.float64() if c in _FLOAT else pa.bool_() if c in _BOOL
                       else pa.int64()) for c in columns])


def write_parquet(path: str, columns: list[str], rows: list[dict], prov: dict):
    import pyarrow as pa
    import pyarrow.parquet as pq
    schema = _schema(columns)
    cols = {c: [r.get(c) for r in rows] for c in columns}
    t = pa.Table.from_pydict(cols, schema=schema)
    t = t.replace_schema_metadata({b"timewarp_provenance": json.dumps(prov, default=str).encode()})
    pq.write_table(t, path + ".tmp", compression="zstd")
    os.replace(path + ".tmp", path)


# ------------------------------------------------------------------------------------------------ probe

def _probe(torch, profiled: bool) -> dict:
    """Three costs, to compare with and without the profiler on the same machine:
    host: per eager launch (1-element add_, perf_counter over n launches and a final synchronize);
    device_big: per kernel, CUDA events around 30 back-to-back add_ on 2^25 fp32 (128 MiB, HBM-bound, ~80 µs:
      device-bound, so the events time the kernels, not the launches);
    graph_tiny: per kernel inside one CUDA graph of 100 tiny add_ (the in-graph floor), events around a replay."""
    dev = torch.device("cuda")
    x = torch.ones(1, device=dev)
    y = torch.ones(1 << 25, device=dev)
    t = torch.zeros(1, device=dev)
    n_host, n_dev, n_graph = 2000, 30, 100
    res = {"profiled": profiled}
    ctx = torch.profiler.record_function(PROBE_LABEL) if profiled else _nullctx()
    with ctx:
        for _ in range(20):
            x.add_(1)
            y.add_(1)
        torch.cuda.synchronize()
        host = []
        for _ in range(3):
            t0 = time.perf_counter()
            for _ in range(n_host):
                x.add_(1)
            torch.cuda.synchronize()
            host.append((time.perf_counter() - t0) / n_host * 1e9)
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        big = []
        for _ in range(3):
            e0.record()
            for _ in range(n_dev):
                y.add_(1)
            e1.record()
            e1.synchronize()
            big.append(e0.elapsed_time(e1) * 1e6 / n_dev)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            t.add_(1)
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(n_graph):
                t.add_(1)
        g.replay()
        torch.cuda.synchronize()
        gt = []
        for _ in range(3):
            e0.record()
            g.replay()
            e1.record()
            e1.synchronize()
            gt.append(e0.elapsed_time(e1) * 1e6 / n_graph)
        del g
    res.update(host_ns_per_launch_add_1elem=statistics.median(host), host_ns_list=host,
               device_ns_per_kernel_add_2p25_events=statistics.median(big), device_ns_list=big,
               graph_ns_per_tiny_kernel_events=statistics.median(gt), graph_ns_list=gt,
               n_host=n_host, n_dev=n_dev, n_graph=n_graph)
    return res


class _nullctx:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


# ------------------------------------------------------------------------------------------------ running

def _run_program(prog: list[str]) -> int:
    """Run `script.py args` or `-m module args` as the interpreter would; return its exit status."""
    if prog[0] == "-m":
        if len(prog) < 2:
            raise SystemExit("record: -m needs a module name")
        sys.argv = [prog[1]] + prog[2:]
        runner = lambda: runpy.run_module(prog[1], run_name="__main__", alter_sys=True)  # noqa: E731
        sys.path.insert(0, os.getcwd())
    else:
        script = prog[0]
        sys.argv = list(prog)
        sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
        runner = lambda: runpy.run_path(script, run_name="__main__")  # noqa: E731
    try:
        runner()
        return 0
    except SystemExit as e:
        if e.code is None:
            return 0
        if isinstance(e.code, int):
            return e.code
        print(e.code, file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" in argv:
        i = argv.index("--")
        own, prog = argv[:i], argv[i + 1:]
    else:
        own, prog = [], argv
        # options before the script name are ours
        while prog and prog[0].startswith("--"):
            own.append(prog.pop(0))
            if own[-1] in ("--out", "--max-rows", "--delay", "--duration", "--window") and prog:
                own.append(prog.pop(0))
    ap = argparse.ArgumentParser(prog="python -m timewarp.integrations.record",
                                 description="Run a Python program on a real GPU under torch.profiler and write "
                                             "one row per kernel/copy/memset (see the module's docstring).")
    ap.add_argument("--out", default="timewarp_record", help="output folder (default ./timewarp_record)")
    ap.add_argument("--max-rows", type=int, default=2_000_000, help="cap on kernels.parquet rows (first in time)")
    ap.add_argument("--delay", type=float, default=None, help="start profiling S seconds into the program")
    ap.add_argument("--duration", type=float, default=None, help="stop profiling S seconds after it started")
    ap.add_argument("--no-shapes", action="store_true", help="record_shapes=False (less host overhead)")
    ap.add_argument("--keep-trace", action="store_true", help="also write the raw Chrome trace (trace.json.gz)")
    ap.add_argument("--no-probe", action="store_true", help="skip the profiler-overhead probe")
    ap.add_argument("--window", choices=("run", "program"), default="run",
                    help="run: profile the whole run or --delay/--duration (default); program: only between the "
                         "program's timewarp_record_window.start() and .stop()")
    args = ap.parse_args(own)
    if args.window == "program" and (args.delay or args.duration):
        ap.error("--window program does not take --delay/--duration")
    if not prog:
        ap.error("no program given: ... -- script.py ARGS or -- -m module ARGS")
    if prog[0] != "-m" and not os.path.isfile(prog[0]):
        ap.error(f"{prog[0]}: no such file")
    os.makedirs(args.out, exist_ok=True)
    command = [os.path.basename(sys.executable), "-m", "timewarp.integrations.record"] + argv
    t_start = time.perf_counter()

    import torch
    from torch.profiler import ProfilerActivity, profile
    cuda = torch.cuda.is_available()
    if not cuda:
        print("record: no CUDA device is visible: only host activity will be recorded (the recorder measures "
              "real GPUs; under `timewarp run` use --trace instead)", file=sys.stderr)
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    probe = {}
    if cuda and not args.no_probe:
        probe["unprofiled_before"] = _probe(torch, False)

    prof = profile(activities=acts, record_shapes=not args.no_shapes, with_stack=False, profile_memory=False)
    state = {"started": False, "stopped": False, "t_on": None, "t_off": None}

    def start():
        if not state["started"]:
            state["started"] = True
            state["t_on"] = time.perf_counter() - t_start
            prof.start()
            if cuda and not args.no_probe:
                probe["profiled_start"] = _probe(torch, True)

    def stop():
        if state["started"] and not state["stopped"]:
            state["stopped"] = True
            state["t_off"] = time.perf_counter() - t_start
            prof.stop()

    import types
    window = types.ModuleType("timewarp_record_window", "start()/stop() the recorder's profiled window")
    window.start, window.stop = start, stop
    sys.modules[window.__name__] = window

    old_handler = None
    if args.window == "program":
        pass
    elif args.delay or args.duration:
        def on_alarm(signum, frame):
            if not state["started"]:
                start()
                if args.duration:
                    signal.setitimer(signal.ITIMER_REAL, args.duration)
            else:
                stop()
        old_handler = signal.signal(signal.SIGALRM, on_alarm)
        if args.delay:
            signal.setitimer(signal.ITIMER_REAL, args.delay)
        else:
            start()
            signal.setitimer(signal.ITIMER_REAL, args.duration)
    else:
        start()

    status, error = 0, None
    t_prog = time.perf_counter()
    try:
        status = _run_program(prog)
    except BaseException as e:  # noqa: BLE001  record what ran, then report the failure
        status, error = 1, "".join(traceback.format_exception(type(e), e, e.__traceback__))
        print(error, file=sys.stderr)
    prog_s = time.perf_counter() - t_prog
    if old_handler is not None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old_handler)
    if cuda:
        try:
            torch.cuda.synchronize()
        except Exception:  # noqa: BLE001
            pass
    stop()
    if cuda and not args.no_probe:
        try:
            probe["unprofiled_after"] = _probe(torch, False)
        except Exception as e:  # noqa: BLE001
            probe["unprofiled_after"] = {"error": repr(e)}

    summary = {"program": prog, "exit_status": status, "error": error, "program_s": prog_s,
               "profiled_window_s": [state["t_on"], state["t_off"]], "probe": probe}
    rows, rt_rows, counts = [], [], {}
    if state["started"]:
        t = time.perf_counter()
        tmpdir = tempfile.mkdtemp(prefix="tw_record_")
        try:
            tpath = os.path.join(tmpdir, "trace.json")
            prof.export_chrome_trace(tpath)
            summary["trace_bytes"] = os.path.getsize(tpath)
            if args.keep_trace:
                with open(tpath, "rb") as fi, gzip.open(os.path.join(args.out, "trace.json.gz"), "wb") as fo:
                    shutil.copyfileobj(fi, fo)
            trace = _load_trace(tpath)
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)
        summary["export_s"] = time.perf_counter() - t
        t = time.perf_counter()
        rows, rt_rows, counts = parse_trace(trace, args.max_rows)
        summary["trace_errors"] = trace.get("ERROR")
        del trace
        summary["parse_s"] = time.perf_counter() - t
    summary["counts"] = counts
    if rows:
        summary["families"] = _count(r["family"] for r in rows)
        summary["kinds"] = _count(r["kind"] for r in rows)
        summary["distinct_kernel_names"] = len({r["name"] for r in rows if r["kind"] == "kernel"})
        summary["distinct_kernel_keys"] = len({(r["name"], r["grid_x"], r["grid_y"], r["grid_z"], r["block_x"],
                                                r["block_y"], r["block_z"], r["shared_mem_bytes"])
                                               for r in rows if r["kind"] == "kernel"})
        summary["launch_apis"] = _count(r["launch_api"] for r in rows)
        summary["rows_with_op"] = sum(1 for r in rows if r["op_name"])
        summary["rows_with_label"] = sum(1 for r in rows if r["label"])
    pr = [r for r in rows if r["label"] == PROBE_LABEL and r["kind"] == "kernel"]
    if pr and "profiled_start" in probe:
        big = [r["dur_ns"] for r in pr if (r["grid_x"] or 0) > 1]
        tiny_eager = [r["launch_api_dur_ns"] for r in pr if (r["grid_x"] or 0) == 1 and r["launch_api"] ==
                      "cudaLaunchKernel" and r["launch_api_dur_ns"]]
        tiny_graph = [r["dur_ns"] for r in pr if (r["grid_x"] or 0) == 1 and r["launch_api"] == "cudaGraphLaunch"]
        ps = probe["profiled_start"]
        ps["cupti_dur_ns_median_add_2p25"] = statistics.median(big) if big else None
        ps["cupti_dur_ns_median_tiny_in_graph"] = statistics.median(tiny_graph) if tiny_graph else None
        ps["launch_api_dur_ns_median_add_1elem"] = statistics.median(tiny_eager) if tiny_eager else None
    prov = provenance(command)
    summary["provenance"] = prov
    summary["record_s"] = time.perf_counter() - t_start
    prov_meta = dict(prov, counts=counts, probe=probe)
    if state["started"]:
        write_parquet(os.path.join(args.out, "kernels.parquet"), KERNEL_COLUMNS, rows, prov_meta)
        write_parquet(os.path.join(args.out, "runtime.parquet"), RUNTIME_COLUMNS, rt_rows, prov_meta)
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1, default=str)
    print(f"record: {len(rows)} GPU rows ({counts.get('gpu_rows_dropped', 0)} dropped), {len(rt_rows)} API calls, "
          f"{summary.get('distinct_kernel_names', 0)} kernel names -> {args.out} "
          f"(program {prog_s:.1f}s, exit {status})", file=sys.stderr)
    return status


def _count(it):
    d = {}
    for v in it:
        d[str(v)] = d.get(str(v), 0) + 1
    return dict(sorted(d.items(), key=lambda kv: -kv[1]))


if __name__ == "__main__":
    sys.exit(main())
