"""Acceptance 1 (continued): torch.compile with Triton kernels, and transformers' Llama forward/generate."""
import json
import shutil

import pytest

from conftest import run_emulated


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    trace = tmp_path_factory.mktemp("compile") / "trace.json"
    run = run_emulated(prog="compile_and_llama.py", timeout=1500, launcher_args=("--trace", str(trace)))
    assert run.rc == 0, run.stderr[-8000:]
    return run.result, json.loads(trace.read_text())["traceEvents"]


@pytest.fixture(scope="module")
def result(traced):
    return traced[0]


def test_torch_compile_runs_triton_kernels(traced):
    result, events = traced
    assert result["compile_shape"] == [512, 1024]
    assert result["compile_dtype"] == "torch.float32"
    assert result["compile_10_ms"] > 0
    # Inductor fused silu * y + sum into one Triton kernel; with the shadow of small results on (the default),
    # torch.compile used to fall back to eager ATen kernels without a word
    names = {e["name"] for e in events}
    assert any(n.startswith("triton_") and "silu" in n for n in names), sorted(names)[:20]


def test_llama_forward(result):
    assert result["logits_shape"] == [2, 16, 1000]
    assert result["logits_dtype"] == "torch.bfloat16"
    assert result["forward_s"] > 0


def test_llama_generate_stops_at_max_new_tokens():
    # the stopping test is computed on the GPU from small tensors: the shadow of small results
    # (integrations/torch_shadow.py) makes the value read back exact, so generate() ends where it should
    run = run_emulated(prog="compile_and_llama.py", args=("--generate",), timeout=600)
    assert run.rc == 0, run.stderr[-4000:]
    assert run.result["generate_shape"] == [2, 24]
    assert run.result["generate_s"] > run.result["forward_s"]


def test_generate_without_the_shadow_reads_stale_values():
    """The reason the shadow exists: with it off, the stopping test reads memory no kernel wrote."""
    code = """
    import json, torch
    ones = torch.ones(4, dtype=torch.bool, device="cuda")
    done = torch.full((4,), False, device="cuda")
    unfinished = ones & ~done
    print(json.dumps({"any_unfinished": bool(unfinished.max() != 0), "sum": int(torch.arange(10, device="cuda").sum())}))
    """
    on = run_emulated(code).result
    assert on == {"any_unfinished": True, "sum": 45}
    off = run_emulated(code, env={"TIMEWARP_SHADOW": "0"}).result
    assert off["sum"] != 45


@pytest.mark.parametrize("native", ["1", "0"])
def test_shadow_knows_which_values_it_cannot_know(native):
    """Values derived from address-only memory (a weight) are unknown: floating-point ones read back as zeros
    instead of being computed on the CPU (what made batch-1 decode steps 1.3-2x slow on the virtual clock),
    small integer and boolean ones are computed on the bytes at hand (so generate()'s stopping test behaves,
    and the prompt part of a concatenation of ids is kept). The C++ shadow (the default) and the Python one
    (TIMEWARP_SHADOW_NATIVE=0, where no compiler is found) follow the same rules."""
    code = """
    import json, sys, torch
    shadow = [m for k, m in sys.modules.items() if k.endswith("torch_shadow")][0]
    w = torch.empty(4096, 4096, device="cuda")                # 64 MiB: address-only
    prompt = torch.arange(5, device="cuda").view(1, 5)         # known: computed exactly
    h = torch.ones(1, 4096, device="cuda") @ w                 # unknown (16 KiB): zeroed
    h2 = h + 1                                                  # unknown float: zero-filled, not computed
    nxt = h.argmax(-1, keepdim=True)                           # unknown integer: computed on the zeros
    done = nxt.squeeze(-1) == 7
    unfinished = torch.ones(1, dtype=torch.bool, device="cuda") & ~done
    ids = torch.cat([prompt, nxt], dim=-1)
    s = h.sum(-1)                                               # unknown float, 4 bytes: zero-filled
    known = torch.arange(4096, device="cuda", dtype=torch.float32) + 1
    ones = torch.ones(1, 4096, device="cuda")
    u = ones @ w                                                # unknown, 16 KiB; its block is freed and
    del u                                                       # taken by the copy from the host below,
    copied = torch.arange(4096, dtype=torch.float32).to("cuda") # whose bytes are known again
    copied_sum = (copied + 1).sum()
    as_float = torch.ones(4, dtype=torch.int64, device="cuda").to(torch.float32)  # a copy, not a view
    reshaped = torch.arange(6, device="cuda").view(2, 3).t().reshape(6)           # likewise
    print(json.dumps({"h2": h2.sum().item(), "nxt": nxt.item(), "unfinished": bool(unfinished.item()),
                      "ids": ids.tolist(), "known": known.sum().item(), "s": s.item(),
                      "impl": shadow.stats()["impl"], "copied": copied_sum.item(),
                      "as_float": as_float.tolist(), "reshaped": reshaped.tolist()}))
    """
    r = run_emulated(code, env={"TIMEWARP_SHADOW_NATIVE": native}).result
    assert r == {"h2": 0.0, "nxt": 0, "unfinished": True, "ids": [[0, 1, 2, 3, 4, 0]],
                 "known": 4096 * 4097 / 2, "s": 0.0, "impl": "c++" if native == "1" else "python",
                 "copied": 4096 * 4097 / 2, "as_float": [1.0] * 4, "reshaped": [0, 3, 1, 4, 2, 5]}, r


def test_shadow_zero_fills_a_block_again_only_after_something_wrote_it():
    """A transformers forward zero-fills the same unknown activations at every call; the C++ shadow skips a
    fill when the block still holds its own zeros (the fills' cache misses were charged to the program).
    A copy from the host, or a result the shadow computes into the block, makes the next fill happen."""
    code = """
    import json, sys, torch
    shadow = [m for k, m in sys.modules.items() if k.endswith("torch_shadow")][0]
    w = torch.empty(4096, 4096, device="cuda")       # address-only: x @ w is unknown, zero-filled
    x = torch.ones(1, 4096, device="cuda")
    out = {}
    y = x @ w
    p = y.data_ptr()
    del y
    kept = shadow.stats()["zeros_kept"]
    y = x @ w                                         # the same 16 KiB block, still zeros
    out["same_block"] = y.data_ptr() == p
    out["kept"] = shadow.stats()["zeros_kept"] - kept
    y.copy_(torch.full((1, 4096), 7.0))               # written by a copy from the host
    out["copied"] = y.cpu().sum().item()
    del y
    y = x @ w
    out["after_copy"] = y.cpu().abs().sum().item()
    del y
    z = torch.arange(4096, device="cuda", dtype=torch.float32).view(1, 4096)  # computed by the shadow
    out["computed"] = [z.data_ptr() == p, z.cpu().sum().item()]
    del z
    y = x @ w
    out["after_computed"] = y.cpu().abs().sum().item()
    print(json.dumps(out))
    """
    r = run_emulated(code).result
    assert r == {"same_block": True, "kept": 1, "copied": 7.0 * 4096, "after_copy": 0.0,
                 "computed": [True, 4095 * 4096 / 2], "after_computed": 0.0}, r


def test_shadow_falls_back_to_python_without_a_compiler(tmp_path):
    """No C++ compiler: `timewarp run` says so once, remembers it, and the program runs with the Python
    shadow (same values, more host time) instead of failing or trying again in every process."""
    code = """
    import json, sys, torch
    shadow = [m for k, m in sys.modules.items() if k.endswith("torch_shadow")][0]
    x = torch.arange(10, device="cuda")
    print(json.dumps({"impl": shadow.stats()["impl"], "sum": int(x.sum())}))
    """
    run = run_emulated(code, env={"TIMEWARP_SHADOW_EXT_DIR": str(tmp_path), "CXX": "/bin/false"})
    assert run.rc == 0, run.stderr[-3000:]
    assert run.result == {"impl": "python", "sum": 45}
    assert run.stderr.count("cannot build the C++ shadow") == 1, run.stderr[-3000:]
    assert list(tmp_path.glob("*/build.failed"))


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs a C compiler")
def test_a_library_built_while_the_program_runs_finds_cuda_headers_and_links_the_fake_runtime():
    """Libraries that compile CUDA code as the program runs (FlashInfer's JIT modules: vLLM's attention on the
    B200) include cuBLASLt's and NVRTC's headers and link -lcudart -lcuda; on a GPU-free machine the toolkit
    is absent or partial. `timewarp run` points CPATH at the headers torch's wheels install and LIBRARY_PATH at
    the fake libraries, so the build succeeds and the library it makes talks to the virtual GPU."""
    code = r'''
    import ctypes, json, os, subprocess, tempfile
    d = tempfile.mkdtemp()
    src = os.path.join(d, "jit.c")
    open(src, "w").write("""
    #include <cublasLt.h>
    #include <nvrtc.h>
    #include <cuda_runtime_api.h>
    int jit_devices(void) { int n = -1; return cudaGetDeviceCount(&n) == cudaSuccess ? n : -2; }
    size_t jit_types(void) { return sizeof(cublasLtHandle_t) + sizeof(nvrtcProgram); }
    """)
    so = os.path.join(d, "libjit.so")
    b = subprocess.run(["gcc", "-shared", "-fPIC", "-o", so, src, "-lcudart", "-lcuda"], capture_output=True,
                       text=True)
    lib = ctypes.CDLL(so) if b.returncode == 0 else None
    print(json.dumps({"rc": b.returncode, "err": b.stderr[-2000:], "devices": lib.jit_devices() if lib else None}))
    '''
    run = run_emulated(code, gpus=2)
    assert run.rc == 0, run.stderr[-3000:]
    assert run.result["rc"] == 0, run.result["err"]
    assert run.result["devices"] == 2
