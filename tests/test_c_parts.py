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
