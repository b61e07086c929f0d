"""The C tests of parts that can run without the rest: the libc time interposers against a stand-in core
(clock arithmetic, sleeps, timed waits, calls from another library's constructor before init, CPython)."""
import pathlib
import subprocess
import sys


def test_libc_interposers(tmp_path):
    script = pathlib.Path(__file__).parent / "c" / "test_libc_run.sh"
    p = subprocess.run(["sh", str(script), str(tmp_path)], capture_output=True, text=True, timeout=300,
                       env={"PATH": "/usr/bin:/bin", "PYTHON": sys.executable})
    assert p.returncode == 0 and "ALL PASSED" in p.stdout, p.stdout[-3000:] + p.stderr[-3000:]


def _lib():
    import importlib.resources
    return pathlib.Path(str(importlib.resources.files("timewarp") / "_lib"))


def test_cublas_front_end(tmp_path):
    """shim_c/cublas/test_cublas.c against the installed libcublas/libcublasLt/libtimewarp."""
    root, lib = pathlib.Path(__file__).parents[1], _lib()
    exe = tmp_path / "test_cublas"
    subprocess.run(["gcc", "-std=gnu11", f"-I{root}/shim_c/include", "-o", str(exe), str(root / "shim_c/cublas/test_cublas.c"),
                    f"-L{lib}", "-l:libcublas.so.13", "-l:libcublasLt.so.13", "-l:libtimewarp.so", f"-Wl,-rpath,{lib}"],
                   check=True, capture_output=True, text=True)
    p = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "ALL OK" in p.stdout, p.stdout[-3000:] + p.stderr[-3000:]


def test_cudnn_backend_against_a_mock_core(tmp_path):
    """shim_c/cudnn/test_cudnn_backend.c: the backend-API call sequence of torch's SDPA and a convolution."""
    d = pathlib.Path(__file__).parents[1] / "shim_c/cudnn"
    exe = tmp_path / "test_cudnn"
    srcs = [str(d / f) for f in ("test_cudnn_backend.c", "backend.c", "graph.c", "handle.c", "version.c",
                                 "legacy_desc.c", "convolution.c")]
    subprocess.run(["gcc", "-std=gnu11", "-Wall", f"-I{d.parent}/include", *srcs, "-lm", "-lpthread", "-o", str(exe)],
                   check=True, capture_output=True, text=True, cwd=d)
    p = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]


def test_full_graph_replays_attention_at_the_step_context(tmp_path):
    """tests/c/test_step_graph.c: a captured attention node is re-timed from the step context at each replay,
    and the nodes after it move with it."""
    root, lib = pathlib.Path(__file__).parents[1], _lib()
    exe = tmp_path / "test_step_graph"
    subprocess.run(["gcc", "-std=gnu11", "-O1", "-o", str(exe), str(root / "tests/c/test_step_graph.c"), f"-L{lib}",
                    "-l:libcudart.so.13", "-l:libtimewarp.so", f"-Wl,-rpath,{lib}"], check=True, capture_output=True, text=True)
    # under the run's time keeper: a synchronize then waits for the host function (without one the fake
    # runs callbacks on a private clock, unsynchronised)
    p = subprocess.run([sys.executable, "-m", "timewarp", "run", "--", str(exe)], capture_output=True, text=True,
                       timeout=120, cwd=tmp_path)
    assert p.returncode == 0 and "ALL OK" in p.stdout, p.stdout[-3000:] + p.stderr[-3000:]
