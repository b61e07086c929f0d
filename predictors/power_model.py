"""The power cap's model (shim_c/core/power.c) in Python, to replay it over a real recording.

vLLM's in-situ GEMM rows (predictors/vllm_gemm_rows.py) were timed wherever the recording's card happened to be:
at full clock in some phases, capped in others. Replaying the emulator's own model over the recording's kernel
timeline says which occurrence ran capped and by how much (FIRST or LATER), so that its row can be brought back
to full clock and stretched by the emulator wherever its own run is capped: serving under steady load, say,
whereas the recording timed many mid-sized prefills at full clock.

The constants are read from power.c (one source). A kernel's power: P_IDLE + P_BUSY + P_COMPUTE * u, u its
compute time at the device's GEMM rate over its duration. The recording has no shapes for cuBLAS's kernels;
vllm_gemm_rows.py aligns them with an emulated trace and passes each GEMM's u. Other kernels: FlashAttention's in
steps of 256 tokens or more draw as compute-bound work (u = ATTN_PREFILL_U), the rest as busy work (u = 0).

    python -m timewarp.predictors.power_model [RECORDING_DIR [EMULATED_TRACE]]

(from a checkout, like profile_build.py; the trace as vllm_gemm_rows.py describes: an emulated run of the
recorded workload, `timewarp run --trace T.json -- python predictors/calibration/vllm_workload.py --model
integrations/models/llama3-8b-shape`)

prints, per engine step of 512 tokens or more, the model's mean factor over the step's GEMMs and, where the
microbenchmark has full-clock rows for the step's o_proj shape (Llama-3-8B: 4096 x 4096), the measured ratio of
those GEMMs to their full-clock rows (the clock the recording ran at).
"""
from __future__ import annotations

import math
import pathlib
import re
import sys

HERE = pathlib.Path(__file__).resolve().parent
POWER_C = HERE.parent / "shim_c" / "core" / "power.c"
DEFAULT_REC = HERE / "data" / "h200" / "vllm_kernels_2026-11-30"
STEP_KERNEL = "triton_red_fused__to_copy_embedding_rms_norm_0"
ATTN_PREFILL_U = 0.6        # the roofline's attention efficiency (shim_c/core/model.c)
PREFILL_TOKENS = 256        # from this many tokens in a step, its GEMMs and attention are compute-bound


def constants(path: pathlib.Path = POWER_C) -> dict[str, float]:
    """power.c's #define NAME VALUE lines"""
    if not path.exists():
        raise SystemExit(f"power_model.py reads the model's constants from a timewarp checkout: {path} not found")
    out = {}
    for m in re.finditer(r"^#define (P_\w+|\w+_NS|FIRST|LATER)\s+([0-9.e+-]+)", path.read_text(), re.M):
        out[m.group(1)] = float(m.group(2))
    missing = {"P_IDLE", "P_BUSY", "P_COMPUTE", "P_COPY", "P_CAP", "HOLD_NS", "TAU_NS", "FIRST_NS", "FIRST", "LATER"} - set(out)
    if missing:
        raise ValueError(f"{path}: no #define for {sorted(missing)}")
    return out


class PowerCap:
    """One device's state, as in power.c's tw_power_stretch: op() takes the operations in start order and
    returns the factor the cap gives a compute-bound one (1 for the rest)."""

    def __init__(self, c: dict[str, float] | None = None):
        self.c = c or constants()
        self.power = self.c["P_IDLE"]
        self.t = None
        self.capped = False
        self.capped_ns = 0.0
        self.below = None        # since when the filtered power is below the cap (None: at or above it)
        self.released = None     # when the cap was last released

    def draw(self, u: float | None) -> float:
        """full-clock power of a kernel of tensor use u, or of a copy (u None)"""
        c = self.c
        if u is None:
            return c["P_IDLE"] + c["P_COPY"]
        return c["P_IDLE"] + c["P_BUSY"] + c["P_COMPUTE"] * min(max(u, 0.0), 1.0)

    def _filter(self, target: float, t0: float, t1: float) -> None:
        c = self.c
        p0 = self.power
        self.power = target + (p0 - target) * math.exp(-(t1 - t0) / c["TAU_NS"])
        if self.power >= c["P_CAP"]:
            self.below = None
        elif p0 >= c["P_CAP"]:   # fell below the cap within the segment
            self.below = t0 + c["TAU_NS"] * math.log((p0 - target) / (c["P_CAP"] - target))

    def op(self, start: float, dur: float, u: float | None, hot: bool, share: float = 1.0) -> float:
        c = self.c
        if dur <= 0:
            return 1.0
        if self.t is None:
            self.t = start
        if start > self.t:
            self._filter(c["P_IDLE"], self.t, start)
            self.t = start
        if self.capped and self.below is not None and start - self.below >= c["HOLD_NS"]:
            self.capped, self.released = False, start
        p = self.draw(u)
        part = 0.0
        if self.capped:
            part = 1.0
        elif p > c["P_CAP"]:
            t = 0.0 if self.power >= c["P_CAP"] else c["TAU_NS"] * math.log((p - self.power) / (p - c["P_CAP"]))
            if t < dur:
                self.capped, part = True, 1.0 - t / dur
                if self.released is None or start + t - self.released >= c["FIRST_NS"]:
                    self.capped_ns = 0.0   # a fresh onset (after a short release the clock had not recovered)
        factor = 1.0
        if part > 0 and hot:
            f = c["FIRST"] if self.capped_ns < c["FIRST_NS"] else c["LATER"]
            factor = 1.0 + part * (f - 1.0) * share
            self.capped_ns += dur * part
        # the op ran `dur` here: the recording's own time, which already holds its slowdown
        end = start + dur
        if end > self.t:
            self._filter(p, max(start, self.t), end)
            self.t = end
        return factor


def replay(rec_dir: pathlib.Path, gemms: dict[int, tuple[float, bool]]) -> dict[int, float]:
    """{start ns: factor} for the recording's kernels whose start is in `gemms` (cuBLAS GEMMs with their u and
    compute-boundness from an aligned shape: gemm_u); every kernel and copy of the recording draws its power in
    start order."""
    import pandas as pd

    k = pd.read_parquet(rec_dir / "kernels.parquet", columns=["kind", "name", "grid_x", "start_ns", "dur_ns"])
    k = k[k.kind.isin(["kernel", "memcpy", "memset"])].sort_values("start_ns", kind="stable")
    cap = PowerCap()
    out = {}
    step_tokens = 0
    for kind, name, gx, start, dur in zip(k.kind, k.name.astype(str), k.grid_x, k.start_ns, k.dur_ns):
        start, dur = int(start), float(dur)
        if name == STEP_KERNEL:
            step_tokens = int(gx)
        big = step_tokens >= PREFILL_TOKENS
        if kind != "kernel":
            cap.op(start, dur, None, hot=False)
        elif start in gemms:
            u, hot, share = gemms[start]
            out[start] = cap.op(start, dur, u, hot, share)
        elif name.startswith("nvjet"):       # a GEMM of a step the alignment left out
            cap.op(start, dur, 0.9 if big else 0.25, hot=big)
        elif "flash" in name.lower():
            cap.op(start, dur, ATTN_PREFILL_U if big else 0.0, hot=False)
        else:
            cap.op(start, dur, 0.0, hot=False)
    return out


def gemm_u(key: tuple, ns: float) -> tuple[float, bool, float]:
    """(u, compute-bound, share) of a GEMM occurrence (key: a_type, ta, tb, M, K, N, batch; bf16) on the H200,
    as power.c's tw_power_draw has them, so that the replay stretches what the emulator stretches: u its
    compute time at the catalog's GEMM rate over its measured time; compute-bound where that compute time
    exceeds its memory time at the catalog's HBM rate (shim_c/core/model.c, tw_annotated_times); share the part
    of its time the cap stretches (compute over memory time, less one, at most 1)"""
    from .fit_attention import rates

    gemm_rate, hbm_rate = rates("H200")   # the catalog's, cached
    _, _, _, m, k, n, b = key
    b = max(b, 1)
    t_compute = 2.0 * m * k * n * b / gemm_rate
    t_memory = 2.0 * b * (m * k + k * n + m * n) / hbm_rate
    share = min(1.0, max(0.0, t_compute / t_memory - 1.0))
    return (t_compute / (ns * 1e-9) if ns > 0 else 0.0), t_compute > t_memory, share


def main(argv: list[str]) -> int:
    import statistics

    from timewarp.predictors import vllm_gemm_rows as vg

    rec = pathlib.Path(argv[0]) if argv else DEFAULT_REC
    trace = pathlib.Path(argv[1]) if len(argv) > 1 else vg.DEFAULT_TRACE
    if not (rec / "kernels.parquet").exists() or not trace.exists():
        print(f"needs {rec}/kernels.parquet and the emulated trace {trace} (vllm_gemm_rows.py)", file=sys.stderr)
        return 2
    occ, _ = vg.occurrences(rec, trace)
    factors = replay(rec, {o["start"]: gemm_u(o["key"], o["ns"]) for o in occ})
    full = vg.full_clock_ns()
    steps: dict = {}
    for o in occ:
        steps.setdefault(o["step"], []).append(o)
    print(f"{'t ms':>9} {'tokens':>6} {'model':>6} {'o_proj/full':>11}  case")
    for step, os_ in sorted(steps.items(), key=lambda s: s[1][0]["start"]):
        n = os_[0]["key"][5]
        if n < 512:
            continue
        w = sum(o["ns"] for o in os_)
        model = sum(o["ns"] * factors[o["start"]] for o in os_) / w
        meas = [o["ns"] / f for o in os_ if o["key"][3:5] == (4096, 4096) and (f := full(o["key"]))]
        m = f"{statistics.median(meas):11.3f}" if meas else " " * 11
        print(f"{os_[0]['start'] / 1e6:9.1f} {n:6d} {model:6.3f} {m}  {os_[0]['case']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
