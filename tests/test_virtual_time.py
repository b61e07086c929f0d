"""Acceptance 4: time is virtual. About one second of predicted GPU work finishes in a fraction of that
wall time while time.perf_counter() and time.time() report about one second."""
import json
import os
import statistics
import subprocess
import sys
import textwrap

import pytest

from conftest import run_emulated


def test_one_second_of_gpu_work_is_fast_and_reads_as_one_second():
    """Without the power cap's model the loop reads as its GEMMs' full-clock time; with it (the default) as
    the real H200's 1.17 s (predictors/data/h200/programs_2026-11-30): the card slows 40 ms into the loop."""
    run = run_emulated(prog="virtual_time.py", args=("1.0",), env={"TIMEWARP_POWER": "0"})
    assert run.rc == 0, run.stderr[-4000:]
    r = run.result
    assert r["expected_s"] == pytest.approx(1.0, rel=0.05)
    assert r["perf_counter_s"] == pytest.approx(r["expected_s"], rel=0.03)
    assert r["time_time_s"] == pytest.approx(r["perf_counter_s"], rel=0.01)
    # the same phase costs the host a small fraction of that (launch overhead of ~700 GEMMs)
    assert r["wall_s"] < 0.25 * r["perf_counter_s"]
    capped = run_emulated(prog="virtual_time.py", args=("1.0",))
    assert capped.rc == 0, capped.stderr[-4000:]
    assert 1.12 < capped.result["perf_counter_s"] / capped.result["expected_s"] < 1.17


def test_sleep_is_virtual():
    code = """
    import json, time
    def up():
        return float(open("/proc/uptime").read().split()[0])
    w0, t0 = up(), time.monotonic()
    time.sleep(30)
    print(json.dumps({"virtual": time.monotonic() - t0, "wall": up() - w0}))
    """
    run = run_emulated(code)
    r = run.result
    assert r["virtual"] == pytest.approx(30, abs=0.05)
    assert r["wall"] < 2


_READ_COST = """
import json, statistics, time
f, pc = time.monotonic, time.perf_counter
def per_op(loop, n=10000):
    t0 = pc()
    loop(n)
    return (pc() - t0) / n
def reads(n):
    for _ in range(n): f()
def adds(n):
    x = 0
    for i in range(n): x += i
reads(1000)
# reads and additions in alternate chunks, so that both see the same pace of this host at each moment
ratios = [per_op(reads) / per_op(adds) for _ in range(15)]
print(json.dumps({"ratio": statistics.median(ratios)}))
"""


def test_reading_the_clock_costs_about_what_a_vdso_read_does():
    """A reading of the virtual clock is a CPU-time system call (0.6-1.1 us in a VM), where a real program's
    clock read is a vDSO call (about 25-60 ns from Python). The shim deducts the difference: otherwise code
    that reads clocks often (CPython takes a reading at each lock acquisition) ran several times slower on
    the virtual clock than natively. Measured as a loop turn with a read over one with an addition (the
    yardstick of this machine's speed), natively, emulated, and emulated with nothing deducted: on the
    2-core development VM 1.8-2.1x, 4.0-8.2x and 16-21x over six runs each. The system call's cost here moves by
    a few hundred ns within a run and between runs (with what the other vCPU runs), which a deduction measured
    once per process cannot follow: the test asks that most of the excess be gone, not all."""
    native = subprocess.run([sys.executable, "-c", textwrap.dedent(_READ_COST)], capture_output=True, text=True,
                            check=True)
    base = json.loads(native.stdout)["ratio"]
    runs = {}
    for name, env in (("deducted", {}), ("raw", {"TIMEWARP_READ_OVERHEAD_NS": "0"})):
        run = run_emulated(_READ_COST, env={"TIMEWARP_HOST_SPEED": "1", **env})
        assert run.rc == 0, run.stderr[-4000:]
        runs[name] = run.result["ratio"]
    assert runs["raw"] > base + 8, (base, runs)
    assert runs["deducted"] - base < 0.5 * (runs["raw"] - base), (base, runs)


_PACED_LOOP = """
import json, time
def chunk():
    c0, t0 = time.thread_time(), time.perf_counter()
    x = 0
    for i in range(200000):
        x += i & 7
    return (time.perf_counter() - t0) / (time.thread_time() - c0)
ratios = [chunk() for _ in range(40)]
print(json.dumps({"ratios": ratios[-10:]}))
"""


def _pace_probes() -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        try:
            if d.isdigit() and b"timewarp.coordinator.pace" in open(f"/proc/{d}/cmdline", "rb").read():
                out.append(int(d))
        except OSError:
            pass
    return out


def test_cpu_time_is_priced_by_the_host_pace():
    """The coordinator's probe measures what a CPU second here is worth on the target's host (its probe's time
    there over its time here, now) and the clock charges CPU time by it. A target probe time far above any
    machine's pins the pace at its bound, 20x: a loop's virtual time is 20x its CPU time. The probe ends
    with the run."""
    before = _pace_probes()
    run = run_emulated(_PACED_LOOP, env={"TIMEWARP_PACE_TARGET_US": "1e6"})
    assert run.rc == 0, run.stderr[-3000:]
    assert statistics.median(run.result["ratios"]) == pytest.approx(20, rel=0.05)
    assert set(_pace_probes()) <= set(before)


_NATIVE_MARKED = """
import ctypes, json, time
from transformers import PreTrainedTokenizerFast
import os
from timewarp import integrations
from timewarp.integrations import native_price
MODEL = os.path.join(os.path.dirname(integrations.__file__), "models", "llama3-8b-shape")
marked = native_price.install()
tok = PreTrainedTokenizerFast(tokenizer_file=MODEL + "/tokenizer.json")
text = " ".join(["The quick brown fox jumps over 13 lazy dogs; again and again."] * 200)
shim = ctypes.CDLL(None)
def ratio(f):
    c0, t0 = time.thread_time(), time.perf_counter()
    f()
    return (time.perf_counter() - t0) / (time.thread_time() - c0)
def loop():
    x = 0
    for i in range(200000):
        x += i & 7
def native_loop():
    was = shim.tw_clock_native(1)
    loop()
    shim.tw_clock_native(was)
for _ in range(60):   # until the native probe has measured every CPU (it starts after the first round)
    ratio(native_loop)
class Detok:
    def step(self):
        loop()
first_only = native_price.native_first(Detok.step)
firsts, laters = [], []
for _ in range(8):
    d = Detok()
    firsts.append(ratio(lambda: first_only(d)))
    laters.append(ratio(lambda: first_only(d)))
print(json.dumps({"marked": marked, "python": [ratio(loop) for _ in range(8)], "first": firsts, "later": laters,
                  "native": [ratio(native_loop) for _ in range(8)],
                  "encode": [ratio(lambda: tok(text)) for _ in range(8)],
                  "decorated": [ratio(native_price.native(loop)) for _ in range(8)]}))
"""


def test_code_marked_native_is_priced_by_the_native_pace():
    """Native code (a tokenizer's Rust) has its own pace: the pace process times a native probe (the embedded
    tokenizer) per CPU, and CPU time a thread spends marked native (tw_clock_native) is charged by it. A
    native target far above any machine's pins the native pace at its bound, 20x, while the Python pace
    stays this machine's (about 0.4-1.3x); HF fast tokenizers' encode is marked once native_price is
    installed, a function wrapped with native_price.native is priced native, and one wrapped with native_first
    (vLLM's detokenizer steps) only in its first call on each object. The cold call's forgiveness is off here
    (its own test is below): the encode's whole CPU is priced."""
    run = run_emulated(_NATIVE_MARKED, env={"TIMEWARP_NATIVE_TARGET_US": "1e6", "TIMEWARP_NATIVE_COLD_US": "0"})
    assert run.rc == 0, run.stderr[-3000:]
    r = run.result
    assert "TokenizersBackend._encode_plus" in r["marked"] or "PreTrainedTokenizerFast._encode_plus" in r["marked"]
    assert statistics.median(r["native"]) == pytest.approx(20, rel=0.05)
    assert statistics.median(r["python"]) < 5
    assert statistics.median(r["encode"]) == pytest.approx(20, rel=0.1)
    assert statistics.median(r["decorated"]) == pytest.approx(20, rel=0.05)
    # vLLM's detokenizer: each object's first call native, its later ones at the Python pace
    assert statistics.median(r["first"]) == pytest.approx(20, rel=0.05) and statistics.median(r["later"]) < 5


_COLD_CALL = """
import json, time
from timewarp.integrations import native_price
def loop(n):
    x = 0
    for i in range(n):
        x += i & 7
def charged(f):
    c0, t0 = time.thread_time(), time.perf_counter()
    f()
    return (time.perf_counter() - t0) * 1e3, (time.thread_time() - c0) * 1e3
cold = native_price.native(lambda: loop(300000), cold=True)
warm = native_price.native(lambda: loop(300000))
tiny = native_price.native(lambda: loop(100), cold=True)
inner = native_price.native(lambda: loop(150000), cold=True)
nested = native_price.native(lambda: (loop(150000), inner()), cold=True)   # transformers 4's _encode_plus
# until the native probe has measured every CPU: its pace (pinned at 20x) is on in 5 calls running (15-27
# calls here under load; a fixed count could fall short on a slower machine, pricing a cold call at the Python pace)
steady = 0
for _ in range(3000):
    v, c = charged(warm)
    steady = steady + 1 if abs(v / c - 20) < 1 else 0
    if steady == 5:
        break
rows = {"cold": [charged(cold) for _ in range(8)], "warm": [charged(warm) for _ in range(8)],
        "nested": [charged(nested) for _ in range(8)],
        "python_after_tiny": [(tiny(), charged(lambda: loop(30000)))[1] for _ in range(8)],
        "python": [charged(lambda: loop(30000)) for _ in range(8)]}
print(json.dumps(rows))
"""


def test_a_cold_tokenizer_call_is_charged_without_this_machines_cache_refill():
    """A tokenization in vLLM's API server starts cold (the run's other processes had the caches); the CPU
    this machine spends refilling them is not the real host's work, whose own refill the native target holds.
    `timewarp run` measures this machine's cold call (coordinator/pace.py's cold_call_us; TIMEWARP_NATIVE_COLD_US
    =0 turns it off, a number fixes it), and a call wrapped as cold is charged its
    CPU less that much at the native pace (pinned here at its bound, 20x, with 2 ms forgiven): once per call
    where marked calls nest, never less than nothing, and what a short call does not use is not taken off
    later Python work."""
    from timewarp.integrations.launcher import LauncherError, host_pricing, native_cold_env
    pricing = host_pricing({})
    assert native_cold_env(pricing, {"TIMEWARP_NATIVE_COLD_US": "250"}) == {"TIMEWARP_NATIVE_COLD_US": "250"}
    with pytest.raises(LauncherError, match="TIMEWARP_NATIVE_COLD_US"):
        native_cold_env(pricing, {"TIMEWARP_NATIVE_COLD_US": "fast"})
    measured = native_cold_env(pricing, {"TIMEWARP_NATIVE_COLD_US": "auto"})["TIMEWARP_NATIVE_COLD_US"]
    assert 0 <= float(measured) < 5000
    assert 0 <= float(native_cold_env(pricing, {})["TIMEWARP_NATIVE_COLD_US"]) < 5000   # measured by default
    assert native_cold_env(pricing, {"TIMEWARP_NATIVE_COLD_US": "0"}) == {}                 # 0 turns it off
    assert native_cold_env(host_pricing({"TIMEWARP_NATIVE_PACE": "0"}), {"TIMEWARP_NATIVE_COLD_US": "auto"}) == {}

    # system time priced as user time (TIMEWARP_KERNEL_PRICE=0): at its own price (0.46, not the 20x pinned
    # here) one cold call on a loaded CI machine came out 48 ms (24%) short; Linux splits a thread's CPU into
    # user and system time by tick samples, so one tick in the kernel can move milliseconds between them
    run = run_emulated(_COLD_CALL, env={"TIMEWARP_NATIVE_TARGET_US": "1e6", "TIMEWARP_NATIVE_COLD_US": "2000",
                                        "TIMEWARP_KERNEL_PRICE": "0"})
    assert run.rc == 0, run.stderr[-3000:]
    r = run.result
    for v, c in r["cold"] + r["nested"]:    # c: this machine's CPU ms of the call (8-30 ms here)
        assert v == pytest.approx(20 * (c - 2.0), rel=0.1)   # nested: forgiven once, not per marked call
    assert statistics.median(v / c for v, c in r["warm"]) == pytest.approx(20, rel=0.05)
    # the tiny call's unused forgiveness is dropped: the Python loop after it (about 1.5 ms of CPU, less than
    # the 2 ms forgiven) is priced like one alone, not at nothing
    after = statistics.median(v / c for v, c in r["python_after_tiny"])
    alone = statistics.median(v / c for v, c in r["python"])
    assert after == pytest.approx(alone, rel=0.25)


def test_the_python_pace_is_blended_with_the_native_probes():
    """Code not marked native is priced by the geometric mean of the Python pace and BLEND_US over the native
    probe's time. A Python target far above any machine's alone pins the pace at 20x; blended with a native
    reference far below the native probe's time (0.01 us against hundreds) it comes out below 1x, and with
    the blend off it stays at 20x."""
    code = _PACED_LOOP.replace("ratios = [chunk() for _ in range(40)]",
                               "w = time.time()\nwhile time.time() - w < 3: chunk()\nratios = [chunk() for _ in range(40)]")
    env = {"TIMEWARP_PACE_TARGET_US": "1e6"}
    blended = run_emulated(code, env={**env, "TIMEWARP_PACE_BLEND_US": "0.01"})
    alone = run_emulated(code, env={**env, "TIMEWARP_PACE_BLEND_US": "0"})
    assert blended.rc == 0 and alone.rc == 0, blended.stderr[-3000:] + alone.stderr[-3000:]
    assert statistics.median(blended.result["ratios"]) < 1
    assert statistics.median(alone.result["ratios"]) == pytest.approx(20, rel=0.05)


def test_a_slower_target_host_scales_the_pace():
    """TIMEWARP_HOST_SLOWDOWN prices a target host that is slower than the median H200 host the defaults
    stand for: it scales the three probe targets, an explicit target stays as given, and a slowdown far above
    any host's pins the pace at its bound, 20x."""
    from timewarp.coordinator import pace
    from timewarp.integrations.launcher import LauncherError, host_pricing
    p = host_pricing({"TIMEWARP_HOST_SLOWDOWN": "1.35"})
    assert (p.pace_target_us, p.native_target_us, p.blend_us) == pytest.approx(
        (pace.TARGET_US * 1.35, pace.NATIVE_TARGET_US * 1.35, pace.BLEND_US * 1.35))
    assert host_pricing({"TIMEWARP_HOST_SLOWDOWN": "2", "TIMEWARP_PACE_TARGET_US": "100"}).pace_target_us == 100
    # the kernel's price scales too, within the pace's bound; 0 charges kernel time at the pace; junk is named
    assert p.kernel_price == pytest.approx(pace.KERNEL_PRICE * 1.35)
    assert host_pricing({"TIMEWARP_HOST_SLOWDOWN": "1e4"}).kernel_price == 20
    assert host_pricing({"TIMEWARP_KERNEL_PRICE": "0"}).kernel_price is None
    assert host_pricing({"TIMEWARP_KERNEL_PRICE": "0.3", "TIMEWARP_HOST_SLOWDOWN": "2"}).kernel_price == 0.3
    with pytest.raises(LauncherError, match="TIMEWARP_KERNEL_PRICE"):
        host_pricing({"TIMEWARP_KERNEL_PRICE": "cheap"})
    run = run_emulated(_PACED_LOOP, env={"TIMEWARP_HOST_SLOWDOWN": "1e4"})
    assert run.rc == 0, run.stderr[-3000:]
    assert statistics.median(run.result["ratios"]) == pytest.approx(20, rel=0.05)


def test_a_fixed_host_speed_replaces_the_pace():
    run = run_emulated(_PACED_LOOP, env={"TIMEWARP_HOST_SPEED": "3", "TIMEWARP_PACE_TARGET_US": "1e6"})
    assert run.rc == 0, run.stderr[-3000:]
    assert statistics.median(run.result["ratios"]) == pytest.approx(3, rel=0.05)


_CHARGE_LOGGED = """
import ctypes, json, os, struct, time
shim = ctypes.CDLL(None)
def charges(pid=None):
    with open(f"{os.environ['TIMEWARP_CHARGE_DIR']}/charge.{pid or os.getpid()}", "rb") as f:
        return struct.unpack("<6Q", f.read(48))
def loop():
    x = 0
    for i in range(300000):
        x += i & 7
c0, t0 = charges(), time.perf_counter_ns()
loop()
c1, t1 = charges(), time.perf_counter_ns()
was = shim.tw_clock_native(1)
loop()
shim.tw_clock_native(was)
c2, t2 = charges(), time.perf_counter_ns()
pid = os.fork()
if pid == 0:
    loop()
    time.perf_counter()   # CPU time is charged at a reading of the clock
    os._exit(0)
os.waitpid(pid, 0)
print(json.dumps({"py": [c1[i] - c0[i] for i in range(6)], "py_ns": t1 - t0, "native": [c2[i] - c1[i] for i in range(6)],
                  "native_ns": t2 - t1, "child": charges(pid), "parent": [a - b for a, b in zip(charges(), c2)]}))
"""


def test_charges_are_logged_per_process(tmp_path):
    """TIMEWARP_CHARGE_DIR (shim_c/core/charge_log.c): each process's running totals of CPU time and what it
    was charged in virtual time, Python and native apart, in a file of its own that can be read while it runs
    (a fork()ed child gets its own). At a fixed host speed of 3 the virtual charge is 3x the CPU time, and it
    is what the clock advanced by."""
    run = run_emulated(_CHARGE_LOGGED, env={"TIMEWARP_HOST_SPEED": "3", "TIMEWARP_CHARGE_DIR": str(tmp_path)})
    assert run.rc == 0, run.stderr[-3000:]
    r = run.result
    host_py, virt_py, host_nat, virt_nat = r["py"][:4]
    assert virt_py == pytest.approx(3 * host_py, rel=0.01) and host_nat < host_py / 20
    assert virt_py == pytest.approx(r["py_ns"], rel=0.05)
    host_py, virt_py, host_nat, virt_nat = r["native"][:4]
    assert virt_nat == pytest.approx(3 * host_nat, rel=0.01) and virt_nat == pytest.approx(r["native_ns"], rel=0.1)
    # the child's loop is in its own file, not in its parent's
    assert r["child"][0] > 0.5 * r["py"][0]
    assert r["parent"][0] < 0.5 * r["py"][0]


@pytest.mark.parametrize("name,value", [("TIMEWARP_HOST_SPEED", "fast"), ("TIMEWARP_PACE_TARGET_US", "-3"),
                                        ("TIMEWARP_PACE_TARGET_US", "abc"),
                                        ("TIMEWARP_NATIVE_TARGET_US", "fast"), ("TIMEWARP_PACE_BLEND_US", "-2"),
                                        ("TIMEWARP_HOST_SLOWDOWN", "0"),
                                        ("TIMEWARP_MSG_HOLD_US", "2ms"),
                                        ("TIMEWARP_SYNC_INPUTS_US", "-1"), ("TIMEWARP_GIL_WAIT_US", "50ms")])
def test_a_malformed_host_speed_is_named(name, value):
    run = run_emulated("print('{}')", env={name: value})
    assert run.rc != 0
    assert f"{name}={value!r}" in run.stderr and "positive number" in run.stderr, run.stderr


@pytest.mark.parametrize("name,value", [("TIMEWARP_MSG_STAMPS", "no"), ("TIMEWARP_POLL_SYNC", "off"),
                                        ("TIMEWARP_SIGNAL_FIRST", "latest"), ("TIMEWARP_EXECUTOR_CLOCK", "false"),
                                        ("TIMEWARP_VLLM_INPUT_CLOCK", "yes"), ("TIMEWARP_GIL_MODEL", "on"),
                                        ("TIMEWARP_WAIT_FIRST_LOOK", "true")])
def test_a_malformed_switch_is_named(name, value):
    run = run_emulated("print('{}')", env={name: value})
    assert run.rc != 0
    assert f"{name}={value!r}" in run.stderr and "expected 0 (off) or 1 (on, the default)" in run.stderr, run.stderr


def test_a_malformed_detokenizer_switch_is_named():
    run = run_emulated("print('{}')", env={"TIMEWARP_DETOK_NATIVE_ALL": "yes"})
    assert run.rc != 0 and "TIMEWARP_DETOK_NATIVE_ALL='yes'" in run.stderr and "every step" in run.stderr, run.stderr


def test_launches_block_once_the_stream_queue_is_full():
    """The driver queues at most 1022 unfinished operations on a stream: the next launch waits until the
    oldest ends (measured on the H200: predictors/data/h200/launch_queue_2026-12-01). Four long GEMMs
    (about 25 ms each; with cuBLAS's memset before each, eight slots) keep the GPU busy; of the 1500 tiny
    adds behind them, the 1016th waits for the first GEMM, every second one after it for one more, and the
    loop cannot end before the GEMMs do. Event records take no slot."""
    code = """
    import json, time, torch
    a = torch.randn(32768, 16384, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(16384, 16384, device="cuda", dtype=torch.bfloat16)
    x = torch.zeros(1, device="cuda")
    x.add_(1); torch.mm(a, b); torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(4):
        torch.mm(a, b)
    e1.record()
    dts, t0 = [], time.perf_counter()
    for _ in range(1500):
        t = time.perf_counter(); x.add_(1); dts.append(time.perf_counter() - t)
    loop = time.perf_counter() - t0
    torch.cuda.synchronize()
    slow = [i for i, d in enumerate(dts) if d > 1e-3]
    print(json.dumps({"slow": slow, "waits_ms": [dts[i] * 1e3 for i in slow],
                      "gemm_ms": e0.elapsed_time(e1), "loop_ms": loop * 1e3}))
    """
    run = run_emulated(code)
    assert run.rc == 0, run.stderr[-4000:]
    r = run.result
    # the 1016th waits for the first GEMM (its rest: 13 ms here), the 1018th, 1020th and 1022nd one GEMM each
    # (25 ms); no other add waits that long (a host stall charged to one add, 1.5 ms once in CI, is no block)
    blocked = [(i, w) for i, w in zip(r["slow"], r["waits_ms"]) if w > 10 or i == 1015]
    assert [i for i, _ in blocked] == [1015, 1017, 1019, 1021], r
    # each later blocked launch waits one GEMM; the loop lasts at least as long as the GEMMs
    assert all(w == pytest.approx(r["gemm_ms"] / 4, rel=0.1) for _, w in blocked[1:]), r
    assert r["loop_ms"] >= r["gemm_ms"], r


_CUBLAS_FIRST_USE = """
import ctypes, json, time, torch
ops = ctypes.CDLL(None).tw_ops_queued
ops.restype, ops.argtypes = ctypes.c_uint64, [ctypes.c_int]
w = torch.randn(28672, 4096, device="cuda", dtype=torch.bfloat16)    # Llama-3-8B's gate_up: a measured shape
x = torch.randn(8192, 4096, device="cuda", dtype=torch.bfloat16)
w2 = torch.randn(100, 64, device="cuda", dtype=torch.bfloat16)       # far from every measured shape
x2 = torch.randn(8192, 64, device="cuda", dtype=torch.bfloat16)
wn = w.t().contiguous().t()   # stored [k, n]: x @ wn.t() is cuBLAS's NN, kernels of their own, the same switches
def busy():                      # about 40 ms of GEMMs of a shape already used
    for _ in range(15):
        torch.mm(x, w.t())
def host_ms(n, a=x, b=w):
    t = time.perf_counter(); torch.mm(a[:n], b.t()); return (time.perf_counter() - t) * 1e3
host_ms(16); busy(); torch.cuda.synchronize()
r = {}
for name, n, a, b in (("new", 6155, x, w), ("again", 6155, x, w), ("same_kernel", 6157, x, w),
                      ("small_same_kernel", 9, x, w), ("small_new", 17, x, w),
                      ("other_new", 6155, x2, w2), ("other_odd", 6157, x2, w2),
                      ("nn_new", 6155, x, wn), ("nn_same_kernel", 6157, x, wn)):
    busy()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record(); busy(); e1.record()     # the GPU time still queued when the GEMM is issued
    r[name] = host_ms(n, a, b)
    torch.cuda.synchronize()
    r["queued_ms"] = e0.elapsed_time(e1)
g = torch.cuda.CUDAGraph()          # a shape first met in a capture: loaded there, no wait after
with torch.cuda.graph(g):
    torch.mm(x[:333], w.t())
busy()
e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
e0.record(); busy(); e1.record()
r["after_capture"] = host_ms(330)     # 330 runs 333's kernel, captured above
torch.cuda.synchronize()
wd = torch.randn(4096, 14336, device="cuda", dtype=torch.bfloat16)   # down: split-K at few tokens
xd = torch.randn(4, 14336, device="cuda", dtype=torch.bfloat16)
w3 = torch.randn(2048, 64, device="cuda", dtype=torch.bfloat16)
def queued(a, b):
    o = ops(0); torch.mm(a, b.t()); return ops(0) - o
r["ops"] = [queued(x[:2048], w[:4096]), queued(x, w[:4096]), queued(xd[:1], wd), queued(x2, w3), queued(x2[:16], w3)]
print(json.dumps(r))
"""


def test_cublas_first_use_of_a_kernel_waits_for_the_gpu():
    """cuBLAS loads a GEMM kernel at its first use in the process, and the load waits for the work queued on
    the device (measured on the H200: a new shape behind 200 ms of GPU work returned after 199.8 ms, again
    after 0.2 ms; predictors/data/h200/launch_queue_2026-12-01/cublas_first_use.json). Which kernel a
    measured shape runs comes from the H200's table (cublas_kernels_2026-12-01: gate_up runs one kernel at
    6155 and 6157 tokens, one at 9 and 16, another at 17; the same weight stored [k, n] runs kernels of its
    own that switch at the same counts); a shape far from every measured one counts every new size above
    512 as a new kernel. A shape captured in a CUDA graph is loaded there. Extra queue slots:
    the memset before stream-K kernels (o at 8192 tokens, not at 2048), the split-K reduction (down at one
    token), and, off the table, a memset for outputs over 1e7 elements."""
    run = run_emulated(_CUBLAS_FIRST_USE)
    assert run.rc == 0, run.stderr[-4000:]
    r = run.result
    for waits in ("new", "small_new", "other_new", "other_odd", "nn_new"):
        assert r[waits] > 0.8 * r["queued_ms"], (waits, r)
    for warm in ("again", "same_kernel", "small_same_kernel", "after_capture", "nn_same_kernel"):
        assert r[warm] < 1, (warm, r)
    assert r["ops"] == [1, 2, 2, 2, 1], r
    eager = run_emulated(_CUBLAS_FIRST_USE, env={"CUDA_MODULE_LOADING": "EAGER"}).result
    assert eager["new"] < 1 and eager["small_new"] < 1 and eager["other_odd"] < 1, eager


_POOL_SIZES = """
import asyncio, json, os, multiprocessing
async def main():
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, int)   # the loop's default executor, as aiohttp's lookups use it
    return loop._default_executor._max_workers
print(json.dumps({"cpu_count": os.cpu_count(), "mp": multiprocessing.cpu_count(),
                  "affinity": len(os.sched_getaffinity(0)), "executor": asyncio.run(main())}))
"""


@pytest.mark.parametrize("gpus,env,cpus", [(1, {}, 16), (2, {}, 32), (1, {"TIMEWARP_HOST_CPUS": "3"}, 3)])
def test_programs_see_the_target_hosts_cpu_count(gpus, env, cpus):
    """os.cpu_count() is the target machine's (16 CPUs per GPU, as the lent H200 machines, or
    TIMEWARP_HOST_CPUS), so that thread pools have the target's size: asyncio's default executor
    min(32, CPUs + 4). Where a thread may run (sched_getaffinity) stays this machine's."""
    run = run_emulated(_POOL_SIZES, gpus=gpus, env=env)
    assert run.rc == 0, run.stderr
    r = json.loads(run.stdout.strip().splitlines()[-1])
    assert r["cpu_count"] == r["mp"] == cpus
    assert r["executor"] == min(32, cpus + 4)
    assert r["affinity"] == len(os.sched_getaffinity(0))


@pytest.mark.parametrize("value", ["0", "sixteen", "-2", "1.5"])
def test_a_malformed_host_cpu_count_is_named(value):
    run = run_emulated("print('{}')", env={"TIMEWARP_HOST_CPUS": value})
    assert run.rc != 0
    assert f"TIMEWARP_HOST_CPUS={value!r}" in run.stderr and "positive whole number" in run.stderr, run.stderr
