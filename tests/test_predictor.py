"""The predictor's layers (shim_c/core/profile.c) as a program sees them: a launch whose shape was measured
on the H200 takes the measured time, one between measurements is interpolated, and another GPU is scaled.
The shipped profile has every measured row; `timewarp validate` uses the one without the held-out rows."""
import json
import pathlib

import pytest

from conftest import run_emulated

PROFILE = pathlib.Path(__file__).parents[1] / "predictors/data/h200/profile.tsv"

# a program's helper: us per call of fn, from a CUDA graph of 10 calls replayed twice back to back
GRAPH_US = """
import json, sys, torch, torch.nn.functional as F

def graph_us(fn):
    fn()
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        with torch.cuda.graph(g):
            for _ in range(10):
                fn()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    g.replay(); e0.record(); g.replay(); e1.record()   # the second replay starts when the first ends
    torch.cuda.synchronize()
    return e0.elapsed_time(e1) * 1e3 / 10
"""

LINEAR_US = GRAPH_US + """
def linear_us(x, w):
    return graph_us(lambda: F.linear(x, w))
"""

PROG = LINEAR_US + """
out = {}
w = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
for m in (1024, 1536):          # 1024 was measured; 1536 never was
    out[m] = linear_us(torch.randn(m, 4096, device="cuda", dtype=torch.bfloat16), w)
print(json.dumps(out))
"""


def measured_ns(m: int) -> float:
    for line in PROFILE.read_text().splitlines():
        f = line.split("\t")
        if f[:7] == ["gemm", "14", "1", "0", "4096", "4096", str(m)]:
            return float(f[8])
    raise AssertionError(f"no profile row for m={m}")


@pytest.fixture(scope="module")
def h200():
    run = run_emulated(PROG)
    assert run.rc == 0, run.stderr[-3000:]
    assert "TIMEWARP_PROFILE" not in run.stderr, run.stderr[-3000:]   # the whole profile loads
    return run.result


def test_measured_shape_takes_the_measured_time(h200):
    assert h200["1024"] == pytest.approx(measured_ns(1024) / 1e3, rel=0.01)


def test_unmeasured_shape_lies_between_its_neighbours(h200):
    lo, hi = measured_ns(1024) / 1e3, measured_ns(2048) / 1e3
    assert lo < h200["1536"] < hi


def test_validation_profile_leaves_the_held_out_rows_out():
    fit = PROFILE.with_name("profile_fit.tsv").read_text()
    assert "\t".join(["gemm", "14", "1", "0", "4096", "4096", "2048"]) in PROFILE.read_text()   # held out
    assert "\t".join(["gemm", "14", "1", "0", "4096", "4096", "2048"]) not in fit
    assert "\t".join(["gemm", "14", "1", "0", "4096", "4096", "1024"]) in fit


def test_in_situ_gemm_rows_are_brought_to_full_clock_by_the_power_model_replayed():
    """vLLM's in-situ GEMM rows were timed wherever the recording's card was: capped in its long prefills
    (8192 tokens: 1.15-1.20x), at full clock in others. Replaying power.c's model over the recording
    (predictors/power_model.py) brings each occurrence to full clock. There, from 1024 tokens up, the rows come
    to 0.90-1.05x the microbenchmark's full-clock rows of the same shapes (timed alone after a cool-down), and
    they are written unflagged (6144x4096 at 8192 tokens within 8% of its full-clock row), for power.c to
    stretch wherever the emulated card is capped."""
    from timewarp.predictors import profile_build as pb

    pd = pytest.importorskip("pandas")
    full = {pb.gemm_key(r): r.t_median_us * 1e3 for r in pb._gemm_rows(pd, pb.GEMM_SRC).itertuples()}
    ratios = {key: ns / full[key] for _, key, ns, _ in pb.vllm_gemm_rows(pd) if key in full and key[5] >= 1024}
    assert len(ratios) >= 16, len(ratios)     # four shapes x 1024, 2048, 4096, 8192 tokens
    assert all(0.90 <= r <= 1.05 for r in ratios.values()), {k[3:6]: round(r, 3) for k, r in ratios.items()}
    every = PROFILE.read_text().splitlines()
    row = [x.split("\t") for x in every if x.startswith("\t".join(["gemm", "14", "1", "0", "6144", "4096", "8192", "1"]))]
    assert len(row) == 1 and len(row[0]) == 9, row                # the in-situ row alone, unflagged
    key = (14, 1, 0, 6144, 4096, 8192, 1)
    assert float(row[0][8]) == pytest.approx(full[key], rel=0.08)


def test_copies_and_memsets_come_from_the_dense_grid_with_the_fixed_split():
    """Copies, memsets and uint8 fills come from memcpy_dense_2026-12-02 (2^k and 1.5 x 2^k bytes, per-node times
    inside graphs): the same rule as before decides the held-out rows (floor(log2(bytes)) odd), so 1.5 KiB
    (floor 10) is fitted and 3 KiB (floor 11) held out, like 2 KiB."""
    from timewarp.predictors import profile_build as pb

    if not (pb.DENSE_SRC / "memcpy.parquet").exists():
        pytest.skip("no dense copy measurements")
    fit = PROFILE.with_name("profile_fit.tsv").read_text().splitlines()
    every = PROFILE.read_text().splitlines()
    for size, held in ((1536, False), (2048, True), (3072, True), (4096, False), (805306368, True)):
        row = "\t".join(["gcopy", "3", "1", str(size)]) + "\t"    # device to device, as graph nodes
        assert any(x.startswith(row) for x in every), size
        assert any(x.startswith(row) for x in fit) != held, size
        assert pb.is_held_out("copy", type("R", (), {"bytes": size})) == held
    # eager copies: device to device from 64 MiB, where a loop of them times the device, not the host's launches
    eager_d2d = {int(x.split("\t")[3]) for x in every if x.startswith("copy\t3\t1\t")}
    assert min(eager_d2d) == 64 << 20 and 1 << 30 in eager_d2d, sorted(eager_d2d)
    sets = {int(x.split("\t")[1]) for x in fit if x.startswith("set\t")}
    assert {1536, 6144} <= sets and not {2048, 3072} & sets
    fills = pb.dense_fill_table(with_held_out=False)
    assert len(fills) and fills.name.str.contains("FillFunctor<unsigned char>").all()


def test_other_gpus_are_scaled_from_the_h200(h200):
    run = run_emulated(PROG, gpu="A100")
    assert run.rc == 0, run.stderr[-3000:]
    a100 = run.result
    # compute-bound GEMMs: the A100's bf16 rate is about a third of the H200's
    assert 2.0 < a100["1024"] / h200["1024"] < 4.0


def h100_over_h200(prog: str) -> dict:
    """Each figure the program prints, emulated on the H100 over emulated on the H200."""
    runs = {gpu: run_emulated(prog, gpu=gpu) for gpu in ("H200", "H100")}
    for gpu, run in runs.items():
        assert run.rc == 0, (gpu, run.stderr[-3000:])
    return {k: runs["H100"].result[k] / v for k, v in runs["H200"].result.items()}


H100_PROG = GRAPH_US + """
def sdpa_us(b, q_len, kv_len):
    q = torch.randn(b, 32, q_len, 128, device="cuda", dtype=torch.bfloat16)
    k, v = (torch.randn(b, 8, kv_len, 128, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    return graph_us(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=q_len > 1, enable_gqa=True))

print(json.dumps({"decode_4x1024": sdpa_us(4, 1, 1024), "decode_64x8192": sdpa_us(64, 1, 8192),
                  "prefill_2048": sdpa_us(1, 2048, 2048)}))
"""


def test_the_h100_slows_a_kernel_by_the_share_of_its_time_its_memory_needed():
    # Measured (predictors/data/h100/transfer_2026-12-05 against the H200's sdpa_cool rows), H100 / H200:
    # decode of 4 x 1024 1.09 (its memory needed half its time on the H200; the ratio of rooflines gave
    # 1.27), of 64 x 8192 1.48 (memory-bound: the bandwidths' ratio, 1.44), a causal prefill of 2048 1.00
    # (tensor-bound; the two cards share SMs and clocks)
    ratio = h100_over_h200(H100_PROG)
    assert 1.0 < ratio["decode_4x1024"] < 1.18, ratio
    assert 1.3 < ratio["decode_64x8192"] < 1.5, ratio
    assert 0.97 < ratio["prefill_2048"] < 1.05, ratio


GEMM_PROG = LINEAR_US + """
out = {}
for m, n, k in ((1, 28672, 4096), (128, 6144, 4096), (4096, 4096, 4096)):
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    out[f"{m}x{n}x{k}"] = linear_us(torch.randn(m, k, device="cuda", dtype=torch.bfloat16), w)
print(json.dumps(out))
"""


def test_a_gemm_moves_to_the_h100_by_the_share_of_its_time_its_weights_needed():
    # Measured H100 / H200 (transfer_2026-12-05/mb_gemm against gemm_cool_2026-12-03, graph rows): one row of
    # a 28672 x 4096 weight 1.48 (it streams at 0.97 of the H200's copy bandwidth: the bandwidths' ratio,
    # 1.44), 128 rows of 6144 x 4096 1.31 (its tensor work, the same on both cards, is half its H200 time; the
    # roofline ratio gave 1.37, the split 1.27), 4096 rows of 4096 x 4096 1.02 (tensor-bound).
    ratio = h100_over_h200(GEMM_PROG)
    assert 1.35 < ratio["1x28672x4096"] < 1.5, ratio
    assert 1.2 < ratio["128x6144x4096"] < 1.34, ratio
    assert 0.97 < ratio["4096x4096x4096"] < 1.05, ratio


EW_PROG = GRAPH_US + """
xb = torch.randn(1 << 26, device="cuda", dtype=torch.bfloat16)
xf, yf = (torch.randn(1 << 26, device="cuda") for _ in range(2))
rows, frows, w = xb.view(-1, 4096), xf.view(-1, 4096), torch.ones(4096, device="cuda")
def hf_rms(x):   # transformers' LlamaRMSNorm: a reduction, then two broadcast multiplies
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5))
print(json.dumps({"gelu_bf16": graph_us(lambda: F.gelu(xb)), "mul_fp32": graph_us(lambda: xf * yf),
                  "sum_fp32": graph_us(lambda: xf.sum()), "softmax_bf16": graph_us(lambda: rows.softmax(-1)),
                  "cast_bf16_fp32": graph_us(lambda: xb.float()), "hf_rms_fp32": graph_us(lambda: hf_rms(frows))}))
"""


def test_pytorchs_elementwise_kernels_move_to_the_h100_by_their_tensors_bytes():
    # PyTorch's elementwise kernels, reductions and softmax are unannotated; their element counts and types
    # (kernel.c) give the bytes the transfer splits their time by. Measured H100 / H200 at 2^26 elements
    # (transfer_2026-12-05 against graph_nocupti_2026-12-04): bf16 GELU 1.07 (it reaches 0.69 of the H200's
    # bandwidth; the roofline ratio gave 1.41), fp32 mul 1.43 (memory-bound), fp32 sum 1.32 (0.82 of the
    # bandwidth; the roofline ratio, on its launch size, gave 1.17), bf16 softmax over rows of 4096 1.00
    # (0.29 of the bandwidth; the roofline ratio gave 1.44), a bf16 -> fp32 cast 1.07 (its loader and storer
    # give 2 + 4 bytes; the first type named, 4 + 4, gave 1.23), transformers' RMS norm in fp32 over rows of
    # 4096 1.22 (its broadcast multiplies, PyTorch's generic elementwise kernel, took the roofline ratio: 1.46).
    # The shares add as fourth powers for these streaming kernels; as squares GELU came out 1.23.
    ratio = h100_over_h200(EW_PROG)
    assert 1.0 < ratio["gelu_bf16"] < 1.2, ratio
    assert 1.35 < ratio["mul_fp32"] < 1.5, ratio
    assert 1.22 < ratio["sum_fp32"] < 1.45, ratio
    assert 0.97 < ratio["softmax_bf16"] < 1.15, ratio
    assert 0.97 < ratio["cast_bf16_fp32"] < 1.15, ratio
    assert 1.1 < ratio["hf_rms_fp32"] < 1.33, ratio


ROWS_PROG = """
import torch, torch.nn.functional as F
for rows, cols in ((64, 4096), (2048, 128), (2048, 4096)):
    x = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
    w = torch.ones(cols, device="cuda", dtype=torch.bfloat16)
    F.rms_norm(x, (cols,), w, 1e-5)
    x.argmax(dim=-1)
x.sum()
torch.randn(512, 1024, device="cuda").sum(dim=-1)   # fp32 rows of 1024: no measured line spans 512 outputs
torch.cuda.synchronize()
print("{}")
"""


def profile_rows(family: str) -> list[list[str]]:
    return [line.split("\t") for line in PROFILE.read_text().splitlines() if line.startswith(family + "\t")]


def test_reductions_and_norms_are_timed_by_their_row_shape(tmp_path):
    """A norm's grid is its row count and a reduction caps its grid, so neither launch size tells the work:
    the shim reads (outputs, inputs per output) from the kernel's arguments, and a measured shape takes its
    measured time."""
    trace = tmp_path / "t.json"
    run = run_emulated(ROWS_PROG, launcher_args=("--trace", str(trace)))
    assert run.rc == 0, run.stderr[-3000:]
    events = [e for e in json.loads(trace.read_text())["traceEvents"] if "rows" in e["args"]]
    norms = {tuple(e["args"]["rows"]): e["dur"] for e in events if "layer_norm" in e["name"]}
    argmax = {tuple(e["args"]["rows"]): e["dur"] for e in events if "ArgMaxOps" in e["name"]}
    sums = {tuple(e["args"]["rows"]): e["dur"] for e in events if "sum_functor" in e["name"]}
    assert set(norms) == set(argmax) == {(64, 4096), (2048, 128), (2048, 4096)}
    assert set(sums) == {(1, 2048 * 4096), (512, 1024)}
    # 2 MiB read: a few us, not a one-output line's time scaled by 512 outputs (869 us before the fix)
    assert sums[(512, 1024)] < 20
    # the same grid (2048 blocks, one per row) with 32x the row length: 32 MiB moved instead of 1 MiB, past
    # the latency floor (keyed by grid, both took the same time)
    assert norms[(2048, 4096)] > 2 * norms[(2048, 128)]
    # a measured shape: the recorder's median plus the back-to-back launch gap
    kgap = float(profile_rows("kgap")[0][1])
    measured = [float(r[3]) for r in profile_rows("krow")
                if r[1:3] == ["64", "4096"] and "vectorized_layer_norm_kernel<c10::BFloat16" in r[4]]
    assert measured, "the profile has no krow row for a bf16 rms_norm over 64 rows of 4096"
    assert norms[(64, 4096)] == pytest.approx((measured[0] + kgap) / 1e3, rel=0.01)


def test_memsets_take_their_measured_device_time(tmp_path):
    code = """
    import ctypes, torch
    rt = ctypes.CDLL("libcudart.so.13")
    x = torch.empty(1 << 26, dtype=torch.uint8, device="cuda")
    for n in (1 << 20, 1 << 26):
        assert rt.cudaMemsetAsync(ctypes.c_void_p(x.data_ptr()), 0, ctypes.c_size_t(n), None) == 0
    torch.cuda.synchronize()
    print("{}")
    """
    trace = tmp_path / "t.json"
    run = run_emulated(code, launcher_args=("--trace", str(trace)))
    assert run.rc == 0, run.stderr[-3000:]
    sets = {e["args"]["bytes"]: e for e in json.loads(trace.read_text())["traceEvents"] if e["name"] == "Memset"}
    measured = {int(r[1]): float(r[2]) for r in profile_rows("set")}
    for n in (1 << 20, 1 << 26):
        assert sets[n]["args"]["layer"] == "exact"
        assert sets[n]["dur"] == pytest.approx(measured[n] / 1e3, rel=0.01)


def test_a_copy_in_a_cuda_graph_takes_its_time_as_a_graph_node(tmp_path):
    """Measured on the H200 (memcpy_dense_2026-12-02): a device-to-device copy of 512 MiB takes 263 us eagerly
    and 397 us as a node of a CUDA graph; the same copy issued eagerly and captured takes each (copy and gcopy
    rows). A captured pinned host-to-device copy of 64 KiB takes its node time (3.9 us)."""
    code = """
    import torch
    a = torch.empty(512 << 20, dtype=torch.uint8, device="cuda"); b = torch.empty_like(a)
    h = torch.empty(64 << 10, dtype=torch.uint8, pin_memory=True)
    d = torch.empty(64 << 10, dtype=torch.uint8, device="cuda")
    b.copy_(a); torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=s):
            b.copy_(a); d.copy_(h, non_blocking=True)
    g.replay(); torch.cuda.synchronize()
    print("{}")
    """
    trace = tmp_path / "t.json"
    run = run_emulated(code, launcher_args=("--trace", str(trace)))
    assert run.rc == 0, run.stderr[-3000:]
    copies = [(e["args"]["bytes"], e["dur"]) for e in json.loads(trace.read_text())["traceEvents"]
              if e["name"].startswith("Memcpy")]
    eager = {(int(r[1]), int(r[3])): float(r[4]) / 1e3 for r in profile_rows("copy")}
    node = {(int(r[1]), int(r[3])): float(r[4]) / 1e3 for r in profile_rows("gcopy")}
    d2d = [us for n, us in copies if n == 512 << 20]
    assert d2d == [pytest.approx(eager[(3, 512 << 20)], rel=0.01), pytest.approx(node[(3, 512 << 20)], rel=0.01)]
    assert d2d[1] > 1.3 * d2d[0]
    assert [us for n, us in copies if n == 64 << 10] == [pytest.approx(node[(1, 64 << 10)], rel=0.01)]


def test_a_kernel_on_another_element_type_of_the_same_size_takes_its_siblings_time(tmp_path):
    """Fills of uint16 and complex64 were never recorded; fills of int16 (2 bytes) and of int64 and float64
    (8 bytes) were. A launch of the unrecorded kernel takes its same-size sibling's time for that launch
    (sibling layer), not the roofline's; the demangler's "complex<float> >" spacing does not keep them apart."""
    code = """
    import torch
    for dt in (torch.uint16, torch.int16, torch.complex64, torch.int64):
        torch.empty(1 << 24, dtype=dt, device="cuda").fill_(1)
    torch.cuda.synchronize()
    print("{}")
    """
    trace = tmp_path / "t.json"
    run = run_emulated(code, launcher_args=("--trace", str(trace)))
    assert run.rc == 0, run.stderr[-3000:]
    fills = {}
    for e in json.loads(trace.read_text())["traceEvents"]:
        for t, mangled in (("u16", "FillFunctorItE"), ("i16", "FillFunctorIsE"), ("c64", "FillFunctorIN3c107complexIfEE"),
                           ("i64", "FillFunctorIlE")):
            if mangled in e["name"]:
                fills[t] = e
    assert set(fills) == {"u16", "i16", "c64", "i64"}
    for new, known in (("u16", "i16"), ("c64", "i64")):
        assert fills[new]["args"]["grid"] == fills[known]["args"]["grid"]
        assert fills[new]["args"]["layer"] == "sibling"
        assert fills[known]["args"]["layer"] in ("exact", "interp")
        assert fills[new]["dur"] == pytest.approx(fills[known]["dur"], rel=0.05)


def test_a_large_launch_is_not_its_one_block_row_scaled_by_the_block_count():
    """A kernel recorded only at one block (FillFunctor<int> in an earlier profile) launched with 16384
    blocks took that row's time times 16384 (6.27 ms for a 64 MiB fill); now at most its roofline."""
    prof = pathlib.Path(__file__).parent / "_one_block_profile.tsv"
    name = ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<int>, std::array<char*, 1ul> >"
            "(int, at::native::FillFunctor<int>, std::array<char*, 1ul>)")
    prof.write_text(f"gpu\tH200\nkern\t1\t1\t1\t128\t1\t1\t383\t{name}\n")
    try:
        run = run_emulated("""
        import json, torch
        x = torch.empty(1 << 24, dtype=torch.int32, device="cuda")
        x.fill_(1); torch.cuda.synchronize()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record(); x.fill_(2); e1.record(); e1.synchronize()
        print(json.dumps({"us": e0.elapsed_time(e1) * 1e3}))
        """, env={"TIMEWARP_PROFILE": str(prof)})
    finally:
        prof.unlink()
    assert run.rc == 0, run.stderr[-3000:]
    assert 5 < run.result["us"] < 100, run.result      # about the roofline's 10 us, not 16384 x 0.383 us


POWER_PROG = """
import json, sys, time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
c = torch.empty_like(a)

def timed(n):
    out = []
    for _ in range(n):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record(); torch.mm(a, a, out=c); e1.record()
        out.append((e0, e1))
    torch.cuda.synchronize()
    return [x.elapsed_time(y) for x, y in out]

torch.mm(a, a, out=c); torch.cuda.synchronize(); time.sleep(1)
run = timed(150)                 # ~210 ms of back-to-back GEMMs
time.sleep(0.015)                # too short an idle gap to restore the clock (20 ms measured: no)
short = timed(5)
time.sleep(0.035)                # long enough (30 ms measured: yes)
after = timed(5)
print(json.dumps({"run": run, "short": short, "after": after}))
"""


def test_sustained_gemms_slow_down_under_the_power_cap():
    """Measured on the H200 (predictors/data/h200/power_2026-11-30b, gemm_cool_2026-12-03): back-to-back
    compute-bound GEMMs keep their full-clock time for the first 30-90 ms, then take 1.10-1.20x as long; 20 ms
    of idle leaves the clock down, 30 ms restores it. On by default; TIMEWARP_POWER=0 turns it off."""
    on = run_emulated(POWER_PROG)
    off = run_emulated(POWER_PROG, env={"TIMEWARP_POWER": "0"})
    assert on.rc == 0 and off.rc == 0, (on.stderr + off.stderr)[-3000:]
    # the first GEMM of each burst also waits for the host's launch after its start event: skip it
    run, after, flat = on.result["run"], on.result["after"], off.result["run"][1:]
    base = flat[0]
    assert max(flat) == pytest.approx(base, rel=1e-3)               # no model: every GEMM the profile's time
    assert run[1] == pytest.approx(base, rel=1e-3)                  # a cold card runs at full clock
    t, onset = run[0], None
    for d in run[1:]:
        if onset is None and d > 1.05 * base:
            onset = t
        t += d
    assert onset is not None and 30 <= onset <= 60, onset           # ms of work before the clock drops
    assert 1.10 <= run[-1] / base <= 1.20
    assert 1.10 <= min(on.result["short"]) / base <= 1.20           # still capped after 15 ms idle
    assert after[1] == pytest.approx(base, rel=1e-3)


def test_the_power_models_python_replay_follows_the_emulator():
    """predictors/power_model.py mirrors shim_c/core/power.c (it brings vLLM's in-situ GEMM rows to full clock
    by replaying the model over their recording): on the same back-to-back GEMMs from an idle card, both cap
    at the same GEMM and stretch each one alike."""
    from timewarp.predictors import power_model as pm

    c = pm.constants(pathlib.Path(__file__).parents[1] / "shim_c" / "core" / "power.c")
    on = run_emulated(POWER_PROG)
    assert on.rc == 0, on.stderr[-3000:]
    run = on.result["run"]
    base = min(run)
    cap, t, replayed = pm.PowerCap(c), 0.0, []
    for _ in run:
        f = cap.op(t, base * 1e6, 1.0, True)
        replayed.append(f)
        t += base * 1e6 * f
    # the first also waits for the host's launch after its start event: compare from the second
    emulated, replayed = [d / base for d in run[1:]], replayed[1:]
    off = [i for i, (a, b) in enumerate(zip(emulated, replayed)) if abs(a - b) > 0.005]
    assert len(off) <= 1, [(i, round(emulated[i], 3), round(replayed[i], 3)) for i in off]
    assert replayed[0] == 1.0 and replayed[-1] == pytest.approx(c["LATER"])


def test_the_cap_stretches_a_gemm_near_the_ridge_less():
    """power.c's tw_power_draw, the share of a kernel's time the cap stretches: a GEMM whose compute time is
    barely above its memory time (4096x4096 at 256 tokens: 1.24x) is stretched by a quarter of the cap's
    slowdown, as vLLM's recording showed (the same time capped and not), a large one by all of it."""
    code = """
    import json, time, torch
    import torch.nn.functional as F
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    c = torch.empty_like(a)
    x = torch.randn(256, 4096, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    def small_ms(n=30):    # queued behind a large GEMM, so that they run back to back
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.mm(a, a, out=c); e0.record()
        for _ in range(n):
            F.linear(x, w)
        e1.record(); torch.cuda.synchronize()
        return e0.elapsed_time(e1) / n
    def big_ms(n):
        e = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
        e[0].record()
        for i in range(n):
            torch.mm(a, a, out=c); e[i + 1].record()
        torch.cuda.synchronize()
        return [e[i].elapsed_time(e[i + 1]) for i in range(n)]
    small_ms(); time.sleep(1)
    cool = small_ms()
    time.sleep(1)
    capped_big = big_ms(150)[-1]          # 200 ms of large GEMMs: capped
    capped = small_ms()
    print(json.dumps({"cool": cool, "capped": capped, "capped_big": capped_big}))
    """
    run = run_emulated(code)
    assert run.rc == 0, run.stderr[-3000:]
    r = run.result
    assert 1.02 < r["capped"] / r["cool"] < 1.06, r            # 1 + 0.24 x 0.16
    off = run_emulated(code, env={"TIMEWARP_POWER": "0"})
    assert off.rc == 0, off.stderr[-3000:]
    assert r["capped_big"] / off.result["capped_big"] == pytest.approx(1.16, rel=0.01)


def test_a_capped_graph_replay_shows_its_stretch_in_the_trace(tmp_path):
    """A CUDA graph of GEMMs replayed back to back: once the power cap sets in each replay takes longer, and a
    trace shows that on the replay's GEMM nodes (shim_c/core/graph.c, tw_graph_exec_trace), one after the other,
    so that per-kernel sums from a trace (predictors/compare_vllm_steps.py) add up to what the replays took."""
    code = """
    import torch
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    c = torch.empty_like(a)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.mm(a, a, out=c)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(10):
            torch.mm(a, a, out=c)
    for _ in range(30):
        g.replay()
    torch.cuda.synchronize()
    print("{}")
    """
    trace = tmp_path / "t.json"
    run = run_emulated(code, launcher_args=("--trace", str(trace)))
    assert run.rc == 0, run.stderr[-3000:]
    gemms = sorted((e for e in json.loads(trace.read_text())["traceEvents"] if "gemm" in e.get("args", {})),
                   key=lambda e: e["ts"])
    nodes = gemms[-300:]                                   # 30 replays of 10 (the eager warm-up GEMM before)
    assert len(gemms) == 301, len(gemms)
    base = nodes[0]["dur"]
    assert nodes[-1]["dur"] == pytest.approx(1.16 * base, rel=0.01)        # LATER, on the nodes themselves
    assert all(b["ts"] >= a["ts"] + a["dur"] - 0.01 for a, b in zip(nodes, nodes[1:]))   # one after the other
    assert nodes[-1]["ts"] + nodes[-1]["dur"] - nodes[0]["ts"] == pytest.approx(sum(e["dur"] for e in nodes), rel=0.01)


def test_rows_measured_inside_sustained_work_are_not_slowed_again(tmp_path):
    """vLLM's in-situ GEMM rows (flagged 1 after the time) were measured while the card was already capped."""
    prof = tmp_path / "profile.tsv"
    prof.write_text("gpu\tH200\ngemm\t14\t0\t0\t8192\t8192\t8192\t1\t1500000\t1\n")
    run = run_emulated(POWER_PROG, env={"TIMEWARP_PROFILE": str(prof)})
    assert run.rc == 0, run.stderr[-3000:]
    assert {round(d, 4) for d in run.result["run"][1:]} == {1.5}


def test_fp32_gemms_are_timed_apart_from_tf32_ones(tmp_path):
    """The profile has fp32 rows measured with TF32 off and on (4.3x apart at 1024^3); a launch takes the
    rows of its own compute type (CUBLAS_COMPUTE_32F: 68, or 32F_FAST_TF32: 77), not the first it finds."""
    code = """
    import torch
    a = torch.randn(1024, 1024, device="cuda")
    a @ a
    torch.backends.cuda.matmul.allow_tf32 = True
    a @ a
    torch.cuda.synchronize()
    print("{}")
    """
    trace = tmp_path / "t.json"
    run = run_emulated(code, launcher_args=("--trace", str(trace)))
    assert run.rc == 0, run.stderr[-3000:]
    gemms = [e for e in json.loads(trace.read_text())["traceEvents"] if "gemm" in e.get("args", {})]
    by_compute = {e["args"]["gemm"]["compute"]: e["dur"] for e in gemms}
    rows = {float(r[8]) / 1e3 for r in profile_rows("gemm") if r[1:8] == ["0", "0", "0", "1024", "1024", "1024", "1"]}
    tf32 = {float(r[8]) / 1e3 for r in profile_rows("gemm") if r[1:8] == ["77", "0", "0", "1024", "1024", "1024", "1"]}
    assert rows and tf32
    assert by_compute[68] == pytest.approx(min(rows), rel=0.01)
    assert by_compute[77] == pytest.approx(min(tf32), rel=0.01)
    assert by_compute[68] > 3 * by_compute[77]


def test_missed_steps_counts_requests_that_joined_a_later_engine_step():
    """predictors/compare_vllm_timeline.py: a request whose API input ended more than 1 ms before an engine
    step began, but which the engine only took after that step, missed it (the measure that found vLLM's
    emulated requests joining later prefill steps than on the real card)."""
    from timewarp.predictors.compare_vllm_timeline import missed_steps

    ms = 1_000_000
    ev = sorted([
        (0, 1 * ms, "api.inputs", "1", "", -1),                      # request 1: taken before the step at 5 ms
        (2 * ms, 2 * ms, "core.request", "2", "type=ADD", -1),
        (3 * ms, 4 * ms, "api.inputs", "1", "", -1),                 # request 2: the step at 5 ms began 1 ms
        (5 * ms, 6 * ms, "sched.schedule", "2", "tokens=1 reqs=1", -1),  # after its input: no slack, no miss
        (6 * ms, 7 * ms, "api.inputs", "1", "", -1),                 # request 3: the step at 9 ms missed
        (7 * ms, 7 * ms, "core.request", "2", "type=ADD", -1),
        (9 * ms, 10 * ms, "sched.schedule", "2", "tokens=2 reqs=2", -1),
        (12 * ms, 12 * ms, "core.request", "2", "type=ADD", -1),
    ])
    assert missed_steps(ev, 0, 20 * ms) == (1, 3)
    assert missed_steps(ev, 0, 20 * ms, slack_ns=4 * ms) == (0, 3)


def test_gpu_waits_lists_engine_calls_that_waited_for_the_gpu():
    """predictors/compare_vllm_timeline.py: execute_model and sample_tokens calls over 50 ms (a cuBLAS kernel
    load waiting for the steps on the GPU, shim_c/core/blas_lazy.c), each with its step's token count."""
    from timewarp.predictors.compare_vllm_timeline import gpu_waits

    ms = 1_000_000
    ev = [
        (0, 1 * ms, "sched.schedule", "2", "tokens=8192 reqs=12 new=11", -1),
        (1 * ms, 16 * ms, "runner.execute", "2", "", -1),              # 15 ms: no wait
        (16 * ms, 200 * ms, "runner.sample", "2", "", -1),             # 184 ms: waited
        (201 * ms, 202 * ms, "sched.schedule", "2", "tokens=6155 reqs=16 new=6", -1),
        (202 * ms, 390 * ms, "runner.execute", "2", "", -1),           # 188 ms: waited
        (390 * ms, 391 * ms, "runner.sample", "2", "", -1),
        (500 * ms, 600 * ms, "runner.execute", "2", "", -1),           # outside the window
    ]
    assert gpu_waits(ev, 0, 450 * ms) == [("sample", 8192, 184.0), ("execute", 6155, 188.0)]


def test_batch_profile_gives_requests_per_step_by_tenth_of_the_steps():
    """predictors/compare_vllm_timeline.py: the case's engine steps cut into equal runs, each run's mean
    requests and tokens per step and the requests it admitted (the measure that shows emulated case 8
    admitting its second wave of 256 requests over more, smaller steps than the real card). Steps that
    schedule nothing do not count."""
    from timewarp.predictors.compare_vllm_timeline import batch_profile

    ev = [(i, i + 1, "sched.schedule", "2", f"tokens={t} reqs={r} new={n} waiting=0", -1)
          for i, (t, r, n) in enumerate([(512, 2, 2), (0, 0, 0), (2, 2, 0), (300, 4, 2), (4, 4, 0)])]
    ev.append((2, 3, "runner.execute", "2", "", -1))
    assert batch_profile(ev, 0, 100, parts=2) == [(2.0, 257.0, 2), (4.0, 152.0, 2)]
    assert batch_profile(ev, 3, 100, parts=2) == [(4.0, 300.0, 2), (4.0, 4.0, 0)]


def test_decode_spans_compare_decode_only_steps_by_request_count_against_every_server(tmp_path):
    """predictors/compare_decode_spans.py: a decode-only step (tokens == requests, none new) is timed by its
    gpu.step; steps with a prompt, with a new request or outside the case do not count, nor a request count
    with fewer than 5 steps; the error is against the median of the servers' medians."""
    from timewarp.predictors.compare_decode_spans import compare, decode_spans

    def server(name, steps, extra=()):
        d = tmp_path / name
        (d / "timeline").mkdir(parents=True)
        lines, t = [], 1000
        for tokens, reqs, new, ms in [*extra, *steps]:
            lines.append(f"sched.schedule\t{t}\t{t + 1}\t9\ttokens={tokens} reqs={reqs} new={new}")
            lines.append(f"gpu.step\t{t + 2}\t{t + 2}\t9\tgpu_ms={ms}\t0")
            t += 10
        (d / "timeline" / "timeline-9.tsv").write_text("\n".join(lines) + "\n")
        (d / "marks.txt").write_text(f"case3 start 1000\ncase3 end {t}\n")
        return d

    noise = [(512, 4, 4, 50.0), (9, 4, 1, 20.0), (5, 4, 0, 30.0)]   # a prompt, a new request, a chunk
    emu = server("emu", [(4, 4, 0, 6.6)] * 6 + [(3, 3, 0, 5.0)] * 2, noise)
    reals = [server(f"r{i}", [(4, 4, 0, ms)] * 5) for i, ms in enumerate((6.0, 6.6, 7.2))]
    assert decode_spans(emu, "case3") == {4: [6.6] * 6, 3: [5.0] * 2}
    assert decode_spans(emu, "case9") is None
    (row,) = compare(emu, reals, ["case3"])
    assert (row["reqs"], row["steps"], row["servers"], row["lo"], row["hi"]) == (4, 6, 3, 6.0, 7.2)
    assert row["error"] == pytest.approx(0.0)
    (row,) = compare(emu, reals[:1], ["case3"])
    assert row["error"] == pytest.approx(0.1)


def test_arrival_bursts_gives_requests_and_ms_per_request_of_each_burst():
    """predictors/compare_vllm_timeline.py: runs of API-server inputs less than gap_ms apart, each as
    (requests, ms per request); shorter runs than `least` and inputs outside the window do not count. Real
    case 14 took its 128 requests in bursts of 74, 26, 26 at 1.3-2.5 ms each, an emulated run in one burst of
    127 at 1.2 ms: the engine split the wave into fewer, larger prefill steps."""
    from timewarp.predictors.compare_vllm_timeline import arrival_bursts

    ms = 1_000_000
    starts = [0, 1, 2, 3, 4,                 # 5 requests 1 ms apart
              40, 42,                         # 2 requests: too few for a burst
              100, 103, 106, 109, 112, 115,   # 6 requests 3 ms apart
              500]                            # outside the window
    ev = [(t * ms, t * ms + ms // 10, "api.inputs", "1", "", -1) for t in starts]
    ev.append((50 * ms, 51 * ms, "api.outputs", "1", "n=2", -1))   # not an input
    assert arrival_bursts(ev, 0, 200 * ms) == [(5, 1.0), (6, 3.0)]
    assert arrival_bursts(ev, 0, 200 * ms, gap_ms=50) == [(7, 42 / 6), (6, 3.0)]
    assert arrival_bursts(ev, 0, 200 * ms, least=6) == [(6, 3.0)]


def test_tokenize_waits_pairs_each_hand_over_with_the_pools_run_in_order():
    """predictors/compare_vllm_timeline.py: the k-th api.tokenize_async (the loop hands a prompt to its
    one-thread pool and takes the result back) holds the k-th api.tokenize (the pool's call); per
    tokenization, the wait to start, the call, and the wait for the result to be taken (ms). A pool call that
    began before the window's first hand-over belongs to an earlier one and is skipped. The pace through a
    backlog (end to end of consecutive calls) counts only where the next was handed over before the previous
    call ended: the rate at which a burst of prompts gets through the pool, not an idle pool's."""
    from timewarp.predictors.compare_vllm_timeline import tokenize_waits

    ms = 1_000_000
    ev = sorted([(-3 * ms, -2 * ms, "api.tokenize", "2", "", 0),        # before the window's first hand-over
                 (0, 5 * ms, "api.tokenize_async", "1", "", -1), (1 * ms, 3 * ms, "api.tokenize", "2", "", 0),
                 (0, 9 * ms, "api.tokenize_async", "1", "", -1), (3 * ms, 4 * ms, "api.tokenize", "2", "", 0),
                 (50 * ms, 60 * ms, "api.inputs", "1", "", -1),
                 (70 * ms, 73 * ms, "api.tokenize_async", "1", "", -1), (70 * ms, 72 * ms, "api.tokenize", "2", "", 0)])
    w = tokenize_waits(ev, 0, 100 * ms)
    assert w == {"to start": [1.0, 3.0, 0.0], "in pool": [2.0, 1.0, 2.0], "to result": [2.0, 5.0, 1.0],
                 "backlog pace": [1.0]}
    assert tokenize_waits([x for x in ev if x[2] != "api.tokenize_async"], 0, 100 * ms) == {}


def test_vllm_forward_host_bands_each_forward_by_the_step_before_it(tmp_path):
    """predictors/vllm_forward_host.py: each model.forward (logged only for steps outside CUDA graphs) takes
    the token count of the sched.schedule before it; its thread CPU and wall time (ms) go to that count's band, with its
    parts where the timeline has them (TIMEWARP_VLLM_TIMELINE_PARTS=1: calls / wall us / CPU us per kind). Forwards
    before the first case's start (the engine's warm-up) do not count; without marks.txt (an offline run) all do."""
    from timewarp.predictors.vllm_forward_host import forwards

    ms = 1_000_000
    rows = [("sched.schedule", 5, 6, "tokens=2048 reqs=1"), ("model.forward", 7, 9, ""),      # warm-up
            ("sched.schedule", 100, 101, "tokens=600 reqs=2"), ("model.forward", 102, 120, ""),
            ("sched.schedule", 130, 131, "tokens=1024 reqs=1"),
            ("model.forward", 132, 150, "piece=33/9000/7000 triton=129/3100/2500 extern=128/2000/900 attn=32/400/300"),
            ("sched.schedule", 160, 161, "tokens=700 reqs=3"), ("model.forward", 162, 190, ""),
            ("sched.schedule", 200, 201, "tokens=64 reqs=64")]                                 # a graph step
    (tmp_path / "timeline").mkdir()
    (tmp_path / "timeline" / "timeline-1.tsv").write_text("".join(
        f"{n}\t{a * ms}\t{b * ms}\t1\t{d}\t{(b - a) * ms // 2}\n" for n, a, b, d in rows))
    (tmp_path / "marks.txt").write_text(f"case1 start {50 * ms}\ncase1 end {300 * ms}\n")
    bands = forwards(tmp_path)
    assert bands[(513, 900)] == [(9.0, 18.0, {}), (14.0, 28.0, {})]
    assert bands[(900, 1300)] == [(9.0, 18.0, {"piece": (33, 9.0, 7.0), "triton": (129, 3.1, 2.5),
                                               "extern": (128, 2.0, 0.9), "attn": (32, 0.4, 0.3)})]
    assert sum(map(len, bands.values())) == 3
    (tmp_path / "marks.txt").unlink()             # an offline run has no cases: every forward counts
    assert sum(map(len, forwards(tmp_path).values())) == 4


def test_validate_judges_graph_rows_by_their_per_node_slope(tmp_path):
    """A graph row's t_median_us divides a fixed per-replay cost (about 12 us on the H200) among its `inner`
    nodes; with --graph-slope both runs also report node_us, and `timewarp validate` compares those as
    'graph-node' rows. Here the emulated per-launch times differ from the real ones only by that fixed cost
    (different `inner`), and the node times agree."""
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    from timewarp.predictors import validate as v

    real, emu = tmp_path / "real", tmp_path / "emu"
    real.mkdir()
    emu.mkdir()
    base = {"op": ["add", "add"], "dtype": ["bf16", "bf16"], "numel": [1024, 1 << 20], "mode": ["graph", "graph"]}
    node = [1.5, 3.0]
    pd.DataFrame({**base, "t_median_us": [n + 12 / 40 for n in node], "node_us": node}).to_parquet(real / "elementwise.parquet")
    pd.DataFrame({**base, "t_median_us": [n + 4 / 100 for n in node], "node_us": [1.5, 3.3]}).to_parquet(emu / "elementwise.parquet")
    per_row, summary = v.compare(real, emu)
    nodes = per_row[per_row["mode"] == "graph-node"].sort_values("numel")
    assert nodes.err.round(6).tolist() == [0.0, 0.1]
    launches = per_row[per_row["mode"] == "graph"].sort_values("numel")
    assert launches.err.iloc[0] < -0.1          # the fixed cost, not the kernel, makes the per-launch gap
    assert set(summary["mode"]) == {"graph", "graph-node"}


NORM_EXTEND_PROG = """
import torch, torch.nn.functional as F
for rows, cols in ((16384, 4096), (65536, 4096), (1, 1024), (1, 4096)):
    x = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
    F.rms_norm(x, (cols,), torch.ones(cols, device="cuda", dtype=torch.bfloat16), 1e-5)
    del x
torch.cuda.synchronize()
print("{}")
"""


def test_row_kernels_extend_a_measured_line_by_its_traffic_and_floor(tmp_path):
    """Beyond the largest measured row count of a row length, a bandwidth-bound norm scales with its traffic
    (on the H200 65536 rows of 4096 take 303 us, 16384 rows 81: 3.7x); below a line's smallest row count it
    keeps that row's time. Before, 65536 x 4096 took the 1024-long line's time scaled by 4 (473 us) and one
    row of 1024 the one-row-of-4096 time (+84%: 4.6 us against 2.5 measured)."""
    trace = tmp_path / "t.json"
    run = run_emulated(NORM_EXTEND_PROG, launcher_args=("--trace", str(trace)))
    assert run.rc == 0, run.stderr[-3000:]
    norms = {tuple(e["args"]["rows"]): e["dur"] for e in json.loads(trace.read_text())["traceEvents"]
             if "rows" in e.get("args", {}) and "layer_norm" in e["name"]}
    assert 3.5 < norms[(65536, 4096)] / norms[(16384, 4096)] < 4.5, norms
    assert norms[(1, 1024)] < 0.8 * norms[(1, 4096)], norms


def test_whole_program_reference_takes_every_leases_runs():
    """compare_programs' real figures are medians over every lease that ran a program (the host-bound ones
    differ by up to 50% between hosts): the demo's four leases (one of them five runs in a row, one output
    after another in a file), the per-op host costs' three, each with its own values, none lost or doubled."""
    import statistics

    from timewarp.predictors import compare_programs as cp

    real = cp.real_figures(cp.REAL)
    assert real["demo"]["decode_ms"] == [12.74, 18.74, 18.33, 15.49, 12.75, 14.09, 11.62, 12.61], real["demo"]
    assert len(real["demo"]["prefill_ms"]) == 8 and statistics.median(real["demo"]["prefill_ms"]) == 15.395
    adds = real["host_ops.py --quick"]["add_m1"]
    assert len(adds) == 7 and 7.52 in adds and 11.2 in adds, adds
    assert len(real["hf_llama8b.py"]["generate_ms_per_token"]) == 9
    # one lease's folder with three runs of each program (real_hf_llama8b.json and .jsonl, three lines of
    # each program in programs.jsonl, three demo outputs): all three count, in order
    h100 = cp.real_figures(cp.HERE / "data" / "h100" / "programs_2026-12-07")
    assert h100["hf_llama8b.py"]["prefill_ms_events"] == pytest.approx([20.5566, 21.5911, 20.9291], abs=1e-3)
    assert h100["device_basics.py"]["graph_replay10_ms"] == pytest.approx([3.623, 3.770, 3.840], abs=1e-3)
    assert h100["demo"]["decode_ms"] == [11.22, 11.31, 11.66], h100["demo"]


MODEL_GEMM_PROG = """
import json, sys, torch, torch.nn.functional as F
out = {}
for n, k in ((8192, 3584), (28672, 3584), (3584, 14336)):    # Gemma-2-9B's QKV, gate-up, down
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(1, k, device="cuda", dtype=torch.bfloat16)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(10):
            F.linear(x, w)
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    g.replay(); e0.record(); g.replay(); e1.record()
    torch.cuda.synchronize()
    out[f"{n}x{k}"] = e0.elapsed_time(e1) * 1e3 / 10   # us per GEMM
print(json.dumps(out))
"""


def test_a_model_held_out_of_the_fit_gets_its_linear_layers_from_other_models_rows():
    """The other models' linear layers (gemm_models_2026-12-03): Gemma-2-9B's are held out of profile_fit.tsv
    whole, so `timewarp validate` predicts them from other shapes' rows (the nearest layer), as a user's model
    that nobody measured; the shipped profile has them, and a one-token decode projection takes its row."""
    pd = pytest.importorskip("pandas")
    from timewarp.predictors import profile_build as pb

    real = {f"{r.n}x{r.k}": r.t_median_us for r in pb._gemm_rows(pd, pb.MODELS_SRC).itertuples()
            if r.tag == "gemma-2-9b" and r.m == 1}
    assert set(real) >= {"8192x3584", "28672x3584", "3584x14336"}
    fit = PROFILE.with_name("profile_fit.tsv").read_text()
    assert "\t".join(["gemm", "14", "1", "0", "28672", "3584", "1"]) + "\t" in PROFILE.read_text()
    assert "\t".join(["gemm", "14", "1", "0", "28672", "3584"]) + "\t" not in fit
    shipped = run_emulated(MODEL_GEMM_PROG)
    held = run_emulated(MODEL_GEMM_PROG, env={"TIMEWARP_PROFILE": str(PROFILE.with_name("profile_fit.tsv"))})
    for run in (shipped, held):
        assert run.rc == 0, run.stderr[-3000:]
    for key, us in real.items():
        if key not in shipped.result:
            continue
        assert shipped.result[key] == pytest.approx(us, rel=0.02), key
        # from other models' rows: within the held-out p90 that `timewarp validate` reports (10%), not exact
        assert held.result[key] == pytest.approx(us, rel=0.15), key
        assert held.result[key] != pytest.approx(us, rel=1e-4), key


MISALIGNED = LINEAR_US + """
out = {}
for n in (4092, 4096):
    w = torch.randn(n, 4096, device="cuda", dtype=torch.bfloat16)
    for m in (1, 4096):
        out[f"{n}x{m}"] = linear_us(torch.randn(m, 4096, device="cuda", dtype=torch.bfloat16), w)
print(json.dumps(out))
"""


def test_gemm_rows_off_16_bytes_run_cublas_slower_kernels():
    """cuBLAS GEMMs whose rows do not start on 16-byte boundaries (4092 bf16 outputs) ran 2.6x slower than the
    aligned neighbour at 4096 tokens on the H200 (gemm_align_2026-12-04); at one token (GEMV) no slower.
    The profile's `gemmalign` floor puts that under the usual prediction."""
    run = run_emulated(MISALIGNED)
    assert run.rc == 0, run.stderr[-3000:]
    t = run.result
    assert 2.0 < t["4092x4096"] / t["4096x4096"] < 3.5
    assert t["4092x1"] < 1.3 * t["4096x1"]


def test_an_inductor_kernel_autotuned_otherwise_takes_the_rows_of_its_other_config(tmp_path):
    """Inductor autotunes a pointwise kernel's (num_warps, XBLOCK) on the emulator's predictions, so the config
    launched can differ from the one the real card picked and its rows were measured with. A real Triton kernel
    in Inductor's form (tensor pointers, then xnumel) launched with 8-warp blocks of 512 has rows; launched
    with 4-warp blocks of 1024 it has none (or only one latency-bound row). Once both configs have been seen,
    the second takes the rows of the first at the grid its xnumel gives there (config layer). A fusion with no
    rows at all is timed by the fitted model of its extent and tensor arguments, not by its thread count."""
    n_lo, n_hi = 1 << 20, 1 << 22          # xnumel: rows at 512-element blocks for 2048 and 8192 blocks
    prof = tmp_path / "profile.tsv"
    prof.write_text("gpu\tH200\nkgap\t0\ninductormodel\t1000\t0.5\t1\n"
                    "kern\t2048\t1\t1\t256\t1\t1\t20000\ttriton_poi_fused_probe_0\n"
                    "kern\t8192\t1\t1\t256\t1\t1\t60000\ttriton_poi_fused_probe_0\n"
                    "kern\t4\t1\t1\t128\t1\t1\t3000\ttriton_poi_fused_probe_0\n")
    code = """
    import json, torch, triton, triton.language as tl

    def pointwise(name):
        def body(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):
            xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:]
            xmask = xindex < xnumel
            tl.store(out_ptr0 + xindex, tl.load(in_ptr0 + xindex, xmask) * 2, xmask)
        body.__name__ = body.__qualname__ = name
        return triton.jit(body)

    probe, unknown = pointwise("triton_poi_fused_probe_0"), pointwise("triton_poi_fused_unknown_0")
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    backlog = torch.empty(1 << 30, device="cuda", dtype=torch.uint8)

    def us(kernel, n, xblock, warps):
        x = torch.empty(n, device="cuda", dtype=torch.bfloat16)
        y = torch.empty_like(x)
        kernel[(triton.cdiv(n, xblock),)](x, y, n, XBLOCK=xblock, num_warps=warps)   # compiles, loads
        torch.cuda.synchronize()
        for _ in range(8):   # 2 ms of backlog: the events time the kernel, not Triton's launch on the host
            backlog.zero_()
        e0.record()
        kernel[(triton.cdiv(n, xblock),)](x, y, n, XBLOCK=xblock, num_warps=warps)
        e1.record()
        torch.cuda.synchronize()
        return e0.elapsed_time(e1) * 1e3

    out = {"a_before": us(probe, %d, 1024, 4)}
    for n in (%d, %d, %d):
        out[f"b{n}"] = us(probe, n, 512, 8)
        out[f"a{n}"] = us(probe, n, 1024, 4)
    out["unknown"] = us(unknown, %d, 1024, 4)
    print(json.dumps(out))
    """ % (n_hi, n_lo, n_hi, 2 * n_lo, n_hi)
    trace = tmp_path / "t.json"
    run = run_emulated(code, env={"TIMEWARP_PROFILE": str(prof)}, launcher_args=("--trace", str(trace)))
    assert run.rc == 0, run.stderr[-3000:]
    t = run.result
    assert t[f"b{n_lo}"] == pytest.approx(20.0, rel=0.02) and t[f"b{n_hi}"] == pytest.approx(60.0, rel=0.02)
    # the 1024-element config at the same xnumel: the other config's rows (exact, then interpolated in log-log)
    assert t[f"a{n_lo}"] == pytest.approx(20.0, rel=0.02) and t[f"a{n_hi}"] == pytest.approx(60.0, rel=0.02)
    assert t[f"a{2 * n_lo}"] == pytest.approx((20.0 * 60.0) ** 0.5, rel=0.02)   # halfway in log blocks
    # a fusion with no rows at all: the fitted model (inductormodel: 1 us + two tensors of n_hi bf16 elements at
    # half the H200's 4.3 TB/s), not 128 threads x 16 bytes a block (4.45 us)
    fitted = 1.0 + 2 * 2 * n_hi / (0.5 * 4.3e12) * 1e6
    assert t["unknown"] == pytest.approx(fitted, rel=0.02)
    # before the 512-element config had been launched, its one-wave row scaled by the blocks was capped there too
    assert t["a_before"] == pytest.approx(fitted, rel=0.02)
    layers = {(e["name"], e["args"]["grid"][0], e["args"]["block"][0]): e["args"]
              for e in json.loads(trace.read_text())["traceEvents"] if e["name"].startswith("triton_poi")}
    assert layers[("triton_poi_fused_probe_0", n_hi // 1024, 128)]["layer"] == "config"
    assert layers[("triton_poi_fused_probe_0", n_hi // 1024, 128)]["rows"] == [n_hi, 1]
    assert layers[("triton_poi_fused_unknown_0", n_hi // 1024, 128)]["layer"] == "nearest"
