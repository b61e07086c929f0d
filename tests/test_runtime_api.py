"""Runtime API semantics a program can see directly: host functions run at their place in the stream,
the per-thread default stream, events that are not ready until the host's clock reaches them."""
from conftest import run_emulated


def test_host_function_runs_after_the_work_before_it():
    code = """
    import ctypes, json, threading, time, torch
    rt = ctypes.CDLL("libcudart.so.13")
    done = threading.Event()
    seen = {}
    @ctypes.CFUNCTYPE(None, ctypes.c_void_p)
    def cb(_):
        seen["t"] = time.perf_counter()   # the callback's thread is at the virtual time it runs
        done.set()
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    a @ a
    torch.cuda.synchronize()
    s = torch.cuda.current_stream().cuda_stream
    t0 = time.perf_counter()
    for _ in range(10):
        a @ a
    assert rt.cudaLaunchHostFunc(ctypes.c_void_p(s), cb, None) == 0
    t_issue = time.perf_counter()
    assert done.wait(30)
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    print(json.dumps({"issue_ms": (t_issue - t0) * 1e3, "cb_ms": (seen["t"] - t0) * 1e3, "sync_ms": (t1 - t0) * 1e3}))
    """
    run = run_emulated(code)
    assert run.rc == 0, run.stderr[-4000:]
    r = run.result
    assert r["issue_ms"] < 2                      # launching is asynchronous
    assert r["cb_ms"] > 10                        # the callback runs after ten 8192^3 GEMMs (~14 ms)
    assert abs(r["cb_ms"] - r["sync_ms"]) < 1


def test_per_thread_default_stream_and_event_readiness():
    code = """
    import ctypes, json, torch
    rt = ctypes.CDLL("libcudart.so.13")
    PER_THREAD = ctypes.c_void_p(2)
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    ev = ctypes.c_void_p()
    assert rt.cudaEventCreate(ctypes.byref(ev)) == 0
    with torch.cuda.stream(torch.cuda.ExternalStream(2)):
        a @ a
    assert rt.cudaEventRecord(ev, PER_THREAD) == 0
    before = rt.cudaEventQuery(ev)
    assert rt.cudaStreamSynchronize(PER_THREAD) == 0
    after = rt.cudaEventQuery(ev)
    bad = rt.cudaStreamSynchronize(ctypes.c_void_p(0xdead0))
    print(json.dumps({"before": before, "after": after, "bad_stream": bad}))
    """
    run = run_emulated(code)
    assert run.rc == 0, run.stderr[-4000:]
    assert run.result == {"before": 600, "after": 0, "bad_stream": 400}
