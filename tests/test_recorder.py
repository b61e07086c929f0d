"""The recorder library (shim_c/record, `timewarp record --shim`). Its measurements need a real GPU (CUPTI);
here: the program runs through it unchanged (every call passed through, here to the emulator's libraries),
a CUPTI that refuses is reported by name, and the raw rows join into the emulator's keys."""
import json
import sys

import pytest

from conftest import run_emulated, timewarp_cmd

PROG = """
import json, torch, torch.nn.functional as F
x = torch.randn(64, 256, device="cuda", dtype=torch.bfloat16)
w = torch.randn(512, 256, device="cuda", dtype=torch.bfloat16)
b = torch.randn(512, device="cuda", dtype=torch.bfloat16)
y = F.linear(x, w)                     # cublasGemmEx
z = F.linear(x, w, b)                  # cublasLtMatmul
m = torch.randn(8, 8, device="cuda") @ torch.randn(8, 8, device="cuda")   # cublasSgemm_v2
torch.cuda.synchronize()
print(json.dumps({"y": list(y.shape), "z": list(z.shape), "m": list(m.shape)}))
"""


def test_a_program_runs_unchanged_through_the_recorder_and_a_refusing_cupti_is_named(tmp_path):
    prog = tmp_path / "p.py"
    prog.write_text(PROG)
    out = tmp_path / "rec"
    run = run_emulated(f"""
    import subprocess, sys
    r = subprocess.run({timewarp_cmd("record", "--shim", "--out", str(out), "--", sys.executable, str(prog))!r},
                       capture_output=True, text=True)
    sys.stderr.write(r.stderr)
    sys.stdout.write(r.stdout)
    print('{{"rc": %d}}' % r.returncode)
    """)
    assert run.rc == 0, run.stderr[-3000:]
    lines = [x for x in run.stdout.splitlines() if x.startswith("{")]
    assert '"y": [64, 512], "z": [64, 512], "m": [8, 8]' in lines[0]   # the program's own results
    assert run.result["rc"] == 3                                       # nothing recorded: an error exit
    assert "cuptiActivityRegisterCallbacks: CUPTI_ERROR_NOT_SUPPORTED" in run.stderr
    assert (out / "launches.parquet").exists() and (out / "summary.json").exists()
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["command"].endswith("p.py") and prov["run_date"]


RAW = """G\t1\tcublasGemmEx\t512\t64\t256\t1\t14\t14\t14\t68\t1\t0\t1
X\t10\t1
A\t10\t1000\t1009000\t7\tcudaLaunchKernel_v7000
K\t10\t0\t7\t5000\t9000\t4\t1\t1\t128\t1\t1\t0\t0\t32\tnvjet_gemm
K\t11\t0\t7\t9500\t10500\t2\t1\t1\t256\t1\t1\t0\t0\t16\t_Z3addv
A\t11\t2000\t9000\t7\tcudaLaunchKernel_v7000
N\t500\t1
C\t900\t500
K\t20\t900\t7\t20000\t24000\t4\t1\t1\t128\t1\t1\t0\t0\t32\tnvjet_gemm
M\t12\t0\t7\t30000\t31000\t4096\t1\t2\t3
S\t13\t0\t7\t32000\t32500\t1024
D\t0
"""


def test_raw_rows_join_into_the_emulators_keys(tmp_path):
    """An eager GEMM's kernel takes its call's annotation through CUPTI's external correlation; a kernel
    replayed from a graph through the node captured inside the call and the node instantiation cloned."""
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    from timewarp.integrations import record_shim

    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "rec.tsv.4242").write_text(RAW)
    s = record_shim.build(tmp_path)
    assert s["rows"] == 5 and s["gemm_kernels"] == 2 and s["replayed"] == 1 and not s["errors"]
    df = pd.read_parquet(tmp_path / "launches.parquet")
    gemm = df[df.name == "nvjet_gemm"]
    assert list(gemm.m) == [512, 512] and list(gemm.n) == [64, 64] and list(gemm.k) == [256, 256]
    assert list(gemm.trans_a) == [1, 1] and list(gemm.graph_node) == [0, 900]
    assert gemm.dur_ns.tolist() == [4000, 4000]
    add = df[df.name == "_Z3addv"].iloc[0]
    assert pd.isna(add.m) and add.launch_api == "cudaLaunchKernel_v7000" and add.launch_api_dur_ns == 7000
    copy = df[df.kind == "memcpy"].iloc[0]
    assert (copy.bytes, copy.copy_kind, copy.dur_ns) == (4096, 1, 1000)
    assert df[df.kind == "memset"].iloc[0].bytes == 1024
    assert (df.pid == 4242).all()
    keys = pd.read_parquet(tmp_path / "launch_keys.parquet")
    gk = keys[keys.m == 512]
    assert sorted(gk.replayed.tolist()) == [False, True] and gk["count"].tolist() == [1, 1]
    assert len(keys) == 5   # eager GEMM, replayed GEMM, the add, the copy, the memset


def test_a_missing_recorder_library_or_command_is_named(tmp_path):
    import subprocess

    env = dict(__import__("os").environ, TIMEWARP_LIB_DIR=str(tmp_path))
    r = subprocess.run(timewarp_cmd("record", "--shim", "--out", str(tmp_path / "o"), "--", "true"),
                       capture_output=True, text=True, env=env)
    assert r.returncode == 2 and "libtimewarp_record.so is missing" in r.stderr and "cupti.h" in r.stderr
    r = subprocess.run(timewarp_cmd("record", "--shim", "--out", str(tmp_path / "o")), capture_output=True, text=True)
    assert r.returncode == 2 and "give the program to record after --" in r.stderr
