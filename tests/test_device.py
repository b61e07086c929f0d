"""Acceptance 1: unmodified PyTorch on the virtual H200 (properties, round trips, ops, events, streams, graphs)."""
import json
import pathlib

import pytest

from conftest import run_emulated

PROBE = json.loads((pathlib.Path(__file__).parents[1] / "predictors/data/h200/device_probe_2026-11-29.json").read_text())


@pytest.fixture(scope="module")
def basics():
    run = run_emulated(prog="device_basics.py")
    assert run.rc == 0, run.stderr[-6000:]
    return run.result


def test_device_is_an_h200(basics):
    real = PROBE["torch"]["props"]
    assert basics["available"] is True
    assert basics["count"] == 1
    assert basics["name"] == "NVIDIA H200" == real["name"]
    assert basics["capability"] == [9, 0]
    assert basics["sms"] == real["multi_processor_count"] == 132
    assert basics["total_memory"] == real["total_memory"]
    assert basics["l2"] == real["L2_cache_size"]
    free, total = basics["mem_get_info"]
    assert total == PROBE["cudaMemGetInfo"]["total"]
    assert 0 < free < total


def test_small_tensors_round_trip(basics):
    for k in ("roundtrip_f32", "roundtrip_i64", "roundtrip_bf16_d2d", "roundtrip_pinned_async"):
        assert basics[k] is True, k
    assert basics["item"] == 42


@pytest.mark.parametrize("dtype", ["torch.bfloat16", "torch.float16", "torch.float32"])
def test_ops_shapes_and_dtypes(basics, dtype):
    ops = basics["ops"][dtype]
    expect = {
        "matmul": [128, 64], "linear": [128, 96], "bmm": [4, 32, 8], "add": [128, 256], "mul": [128, 256],
        "silu": [128, 256], "gelu": [128, 256], "sum": [128], "mean": [], "max": [256], "softmax": [128, 256],
        "argmax": [128], "rms_norm": [128, 256], "sdpa_causal_gqa": [2, 8, 64, 64], "sdpa_causal": [2, 8, 64, 64],
    }
    for name, shape in expect.items():
        got_shape, got_dtype, device = ops[name]
        assert got_shape == shape, name
        assert device == "cuda", name
        assert got_dtype == ("torch.int64" if name == "argmax" else dtype), name


def test_events_measure_virtual_time(basics):
    # 20 GEMMs of 8192^3 in bf16: 22 TFLOP, tens of ms on an H200 (~790 TFLOP/s measured)
    ms = basics["gemm20_event_ms"]
    assert 20 < ms < 60
    # time.perf_counter around the synchronized phase sees the same virtual time (plus host launch time)
    assert basics["gemm20_perf_ms"] == pytest.approx(ms, rel=0.05)


def test_streams(basics):
    assert basics["side_stream_query_after_sync"] is True
    assert basics["side_stream_ms"] > 4  # five 8192^3 GEMMs


def test_cuda_graph_replay_takes_the_captured_time(basics):
    assert basics["graph_out_shape"] == [4096, 4096]
    # replaying the graph costs the same GPU time as running its kernels eagerly (GPU-bound here)
    assert basics["graph_replay10_ms"] == pytest.approx(basics["eager10_ms"], rel=0.1)
    assert basics["graph_replay10_ms"] > 1
