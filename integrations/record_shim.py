"""`timewarp record --shim [--out DIR] -- CMD ...`: run any program unmodified on a real GPU with the recorder
library (shim_c/record, libtimewarp_record.so) preloaded, and write DIR/launches.parquet: one row per kernel,
copy and memset the GPU ran, keyed as the emulator keys its launch records.

The library passes every call through to the real CUDA libraries. It wraps cuBLAS's and cuBLASLt's GEMM entry
points (the real function, called between marks) so that the kernels a GEMM launches carry the annotation
the emulator's fake cuBLAS records for the same call, and it takes durations from CUPTI's activity API (the
GPU's timestamps) and the host's time inside each launch, copy, memset and graph-launch call from CUPTI's
runtime and driver API records. Kernels replayed from a CUDA graph carry the annotation of their capture
(CUPTI's graph-node callbacks). Every process the program starts is recorded (one raw file each).

launch_keys.parquet groups them by the emulator's launch key (GEMM calls summed over their kernels): count,
median, p10, p90 of the device time. Both carry the provenance (provenance.json: date, command, host, GPU, driver, CUDA packages, the
clocks at the end) as schema metadata under `timewarp_provenance`, as integrations/record.py's tables do.
Columns: pid, kind (kernel | memcpy | memset), name (mangled, as the emulator's trace names
kernels), grid_x..z, block_x..z, static_smem, dynamic_smem, registers, stream, start_ns, dur_ns, graph_node
(0 unless replayed from a graph), bytes, copy_kind / src_kind / dst_kind (CUPTI's enums: copy 1 HtoD, 2 DtoH,
8 DtoD; memory 1 pageable, 2 pinned, 3 device), gemm_api, m, n, k, batch, a_type, b_type, c_type, compute,
trans_a, trans_b, epilogue (the GEMM annotation, null elsewhere), gemm_call (the GEMM call's number: a call's
kernels, split-K reductions too, share it and their replays' correlation), launch_api, launch_api_dur_ns (the host's
time in the call that launched it; null for graph replays' nodes beyond the first), correlation.

Differences from `timewarp record` (integrations/record.py, torch.profiler): any program (not only Python),
GEMMs keyed by cuBLAS's view directly rather than by the aten operator's shapes, no operator names or
record_function labels. Both use CUPTI and cannot run beside another CUPTI client (torch.profiler inside the
program): the recorder then writes an `E` line and records nothing.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import pathlib
import subprocess
import sys

GEMM_FIELDS = ["gemm_api", "m", "n", "k", "batch", "a_type", "b_type", "c_type", "compute", "trans_a", "trans_b",
               "epilogue"]


class RecordError(RuntimeError):
    pass


def library() -> pathlib.Path:
    """TIMEWARP_LIB_DIR's (a development build, or a copy carried to a GPU machine), else the installed
    package's timewarp/_lib."""
    d = os.environ.get("TIMEWARP_LIB_DIR")
    lib = (pathlib.Path(d) if d else pathlib.Path(__file__).resolve().parents[1] / "_lib") / "libtimewarp_record.so"
    if not lib.exists():
        raise RecordError(f"{lib} is missing: it is built only where CUPTI's headers were found (cupti.h in "
                          "/usr/local/cuda/include or TIMEWARP_CUPTI_INCLUDE) when timewarp was installed")
    return lib


def find_cupti() -> str | None:
    """PyTorch's libcupti (NVIDIA's wheels), else None (the library then tries the soname)."""
    if os.environ.get("TIMEWARP_CUPTI"):
        return os.environ["TIMEWARP_CUPTI"]
    for base in sys.path:
        hits = sorted(glob.glob(os.path.join(base, "nvidia", "*", "lib", "libcupti.so*")) +
                      glob.glob(os.path.join(base, "nvidia", "cuda_cupti", "lib", "libcupti.so*")))
        if hits:
            return hits[-1]
    return None


def provenance(cmd: list[str]) -> dict:
    """Where and how the recording was made: date, command, host, the GPU and driver (nvidia-smi), the CUDA
    packages of this Python environment (the program's, when it is a Python program of the same one)."""
    import datetime
    import importlib.metadata as md
    import platform
    import socket

    from . import record

    prov = {"run_date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": " ".join(cmd), "recorder": "libtimewarp_record.so (timewarp record --shim)",
            "platform": platform.platform(), "host_cpu": record._cpu_model(), "nproc": os.cpu_count(),
            "hostname": socket.gethostname(), "driver": record._driver_version(), "cupti": find_cupti()}
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=name,clocks.max.sm,power.limit", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=10)
        prov["gpus"] = r.stdout.strip().splitlines()
    except (OSError, subprocess.SubprocessError):
        prov["gpus"] = None
    prov["packages"] = dict(sorted((d.metadata["Name"].lower(), d.version) for d in md.distributions()
                                   if (d.metadata["Name"] or "").lower().startswith(("nvidia-", "torch", "vllm",
                                                                                      "triton", "flashinfer"))))
    return prov


def run(cmd: list[str], out: pathlib.Path) -> int:
    raw = out / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for f in raw.glob("rec.tsv.*"):
        f.unlink()
    env = dict(os.environ)
    env["LD_PRELOAD"] = " ".join(x for x in (str(library()), env.get("LD_PRELOAD", "")) if x)
    env["TIMEWARP_RECORD_OUT"] = str(raw / "rec.tsv")
    cupti = find_cupti()
    if cupti:
        env["TIMEWARP_CUPTI"] = cupti
    (out / "provenance.json").write_text(json.dumps(provenance(cmd), indent=1, default=str))
    rc = subprocess.call(cmd, env=env)
    try:   # the clocks at the end: whether the card was power-capped (docs/LIMITATIONS.md)
        from . import record
        prov = json.loads((out / "provenance.json").read_text())
        prov["gpu_clocks_at_end"] = record._gpu_clocks()
        (out / "provenance.json").write_text(json.dumps(prov, indent=1, default=str))
    except Exception:  # noqa: BLE001  provenance must never cost the recording
        pass
    return rc


def parse(path: pathlib.Path) -> tuple[list[dict], list[str], int]:
    """One process's raw file -> (rows, errors, dropped records)."""
    gemms, corr_gemm, node_gemm, clones, api = {}, {}, {}, {}, {}
    events, errors, dropped = [], [], 0
    for line in path.read_text(errors="replace").splitlines():
        f = line.split("\t")
        tag = f[0]
        if tag == "G" and len(f) == 14:
            gemms[int(f[1])] = dict(zip(GEMM_FIELDS, [f[2], *map(int, f[3:14])]))
        elif tag == "X" and len(f) == 3:
            corr_gemm[int(f[1])] = int(f[2])
        elif tag == "N" and len(f) == 3:
            node_gemm[int(f[1])] = int(f[2])
        elif tag == "C" and len(f) == 3:
            clones[int(f[1])] = int(f[2])
        elif tag == "A" and len(f) == 6:
            api[int(f[1])] = (f[5], int(f[3]) - int(f[2]))
        elif (tag, len(f)) in (("K", 16), ("M", 10), ("S", 7)):
            events.append(f)
        elif tag == "E":
            errors.append("\t".join(f[1:]))
        elif tag == "D" and len(f) == 2:
            dropped += int(f[1])
        elif tag:   # a line cut short: the process was killed while writing it
            errors.append(f"malformed row skipped: {line[:80]!r}")
    rows = []
    seen_corr = set()
    for f in events:
        corr, node, stream, start, end = int(f[1]), int(f[2]), int(f[3]), int(f[4]), int(f[5])
        r = {"kind": {"K": "kernel", "M": "memcpy", "S": "memset"}[f[0]], "correlation": corr, "graph_node": node,
             "stream": stream, "start_ns": start, "dur_ns": end - start}
        if f[0] == "K":
            r.update(zip(["grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "static_smem", "dynamic_smem",
                          "registers"], map(int, f[6:15])))
            r["name"] = f[15]
        elif f[0] == "M":
            r.update(bytes=int(f[6]), copy_kind=int(f[7]), src_kind=int(f[8]), dst_kind=int(f[9]))
        else:
            r["bytes"] = int(f[6])
        # the GEMM call it came from: the API call's (eager), or its graph node's capture (replayed)
        g = corr_gemm.get(corr) if not node else node_gemm.get(node, node_gemm.get(clones.get(node, -1)))
        if g in gemms:
            r.update(gemms[g], gemm_call=g)
        if corr in api and corr not in seen_corr:
            r["launch_api"], r["launch_api_dur_ns"] = api[corr]
            seen_corr.add(corr)
        rows.append(r)
    return rows, errors, dropped


KEY_COLUMNS = ["kind", "name", "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "bytes", "copy_kind",
               "m", "n", "k", "batch", "a_type", "trans_a", "trans_b", "replayed"]


def per_call(df):
    """The rows with each GEMM call's kernels (a split-K GEMM launches two, eagerly with two correlation ids)
    summed into one row, named by its first; other rows as they are. Adds `replayed` and any missing key
    column."""
    import pandas as pd

    df = df.assign(replayed=df.graph_node > 0)
    for c in KEY_COLUMNS:
        if c not in df:
            df[c] = None
    if "gemm_call" not in df:
        return df
    g = df[df.gemm_call.notna()]
    g = g.assign(call=[(c, r if n > 0 else 0) for c, r, n in zip(g.gemm_call, g.correlation, g.graph_node)])
    calls = g.groupby(["pid", "call"], sort=False).agg({**{c: "first" for c in KEY_COLUMNS}, "dur_ns": "sum"})
    return pd.concat([df[df.gemm_call.isna()], calls.reset_index(drop=True)], ignore_index=True)


def launch_keys(df):
    """The rows grouped by the emulator's launch key (and whether replayed from a graph): count, median, p10 and
    p90 of the device time in ns; a GEMM call's kernels (split-K) are summed first (per_call)."""
    import pandas as pd

    if not len(df):
        return pd.DataFrame(columns=KEY_COLUMNS + ["count", "median", "p10", "p90"])
    return (per_call(df).groupby(KEY_COLUMNS, dropna=False).dur_ns
            .agg(count="size", median="median", p10=lambda x: x.quantile(0.1), p90=lambda x: x.quantile(0.9))
            .reset_index())


def build(out: pathlib.Path) -> dict:
    import pandas as pd

    rows, errors, dropped, pids = [], [], 0, []
    for path in sorted((out / "raw").glob("rec.tsv.*")):
        pid = int(path.name.rsplit(".", 1)[1])
        r, e, d = parse(path)
        rows += [dict(x, pid=pid) for x in r]
        errors += [f"pid {pid}: {x}" for x in e]
        dropped += d
        pids.append(pid)
    df = pd.DataFrame(rows)
    if len(df):
        df = df.sort_values(["pid", "start_ns"]).reset_index(drop=True)
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(df, preserve_index=False)
    prov = out / "provenance.json"
    if prov.exists():   # the same key integrations/record.py uses
        table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                               b"timewarp_provenance": prov.read_bytes()})
    pq.write_table(table, out / "launches.parquet")
    keys = launch_keys(df)
    pq.write_table(pa.Table.from_pandas(keys, preserve_index=False).replace_schema_metadata(table.schema.metadata),
                   out / "launch_keys.parquet")
    summary = {"processes": pids, "rows": len(df), "errors": errors, "dropped_records": dropped,
               "kernels": int((df.kind == "kernel").sum()) if len(df) else 0,
               "gemm_kernels": int(df.m.notna().sum()) if "m" in df else 0,
               "replayed": int((df.graph_node > 0).sum()) if len(df) else 0}
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="timewarp record --shim", description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=pathlib.Path, default=pathlib.Path("timewarp-record"))
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if not cmd:
        ap.error("give the program to record after --")
    try:
        rc = run(cmd, a.out)
    except RecordError as e:
        print(f"timewarp record: {e}", file=sys.stderr)
        return 2
    s = build(a.out)
    print(f"record: {s['rows']} GPU rows ({s['kernels']} kernels, {s['gemm_kernels']} with a GEMM annotation, "
          f"{s['replayed']} replayed from graphs) from {len(s['processes'])} process(es), {s['dropped_records']} "
          f"dropped -> {a.out / 'launches.parquet'} (program exit {rc})", file=sys.stderr)
    for e in s["errors"]:
        print(f"timewarp record: {e}", file=sys.stderr)
    if not s["rows"]:
        prov = json.loads((a.out / "provenance.json").read_text()) if (a.out / "provenance.json").exists() else {}
        if not prov.get("gpus"):
            print("timewarp record: nothing recorded: it runs programs on a real NVIDIA GPU, and nvidia-smi found "
                  "none here (to predict on a machine without one: timewarp run)", file=sys.stderr)
    if s["errors"] and not s["rows"]:
        return 3
    return rc


if __name__ == "__main__":
    sys.exit(main())
