"""Acceptance 1 (continued): torch.compile with Triton kernels, and transformers' Llama forward/generate."""
import subprocess

import pytest

from conftest import run_emulated


@pytest.fixture(scope="module")
def result():
    run = run_emulated(prog="compile_and_llama.py", timeout=1500)
    assert run.rc == 0, run.stderr[-8000:]
    return run.result


def test_torch_compile_runs_triton_kernels(result):
    assert result["compile_shape"] == [512, 1024]
    assert result["compile_dtype"] == "torch.float32"
    assert result["compile_10_ms"] > 0


def test_llama_forward(result):
    assert result["logits_shape"] == [2, 16, 1000]
    assert result["logits_dtype"] == "torch.bfloat16"
    assert result["forward_s"] > 0


@pytest.mark.xfail(strict=True, raises=(subprocess.TimeoutExpired, AssertionError),
                   reason="generate()'s stopping test is computed by GPU kernels, which the emulator does not run: "
                          "the value read back is stale memory and the loop does not end (docs/LIMITATIONS.md)")
def test_llama_generate_stops_at_max_new_tokens():
    run = run_emulated(prog="compile_and_llama.py", args=("--generate",), timeout=120)
    assert run.rc == 0, run.stderr[-4000:]
    assert run.result["generate_shape"] == [2, 24]
