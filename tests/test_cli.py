"""Bad input at the launcher: unknown GPUs, missing commands."""
import subprocess

from conftest import timewarp_cmd


def test_unknown_gpu_lists_the_known_ones():
    p = subprocess.run(timewarp_cmd("run", "--gpu", "H300", "--", "true"), capture_output=True, text=True)
    assert p.returncode == 2
    for known in ("H200", "H100", "A100", "B200"):
        assert known in p.stderr


def test_command_not_found_exits_like_the_shell():
    p = subprocess.run(timewarp_cmd("run", "--", "no-such-command-xyz"), capture_output=True, text=True)
    assert p.returncode == 127
    assert "no-such-command-xyz: command not found" in p.stderr


def test_exit_code_is_passed_through():
    p = subprocess.run(timewarp_cmd("run", "--", "sh", "-c", "exit 7"), capture_output=True, text=True)
    assert p.returncode == 7


def test_gpus_lists_the_catalog():
    p = subprocess.run(timewarp_cmd("gpus"), capture_output=True, text=True)
    assert p.returncode == 0
    assert "NVIDIA H200" in p.stdout and "B200" in p.stdout


def test_a_missing_redirector_is_explained():
    import os
    env = dict(os.environ, LD_AUDIT="/nonexistent/libtimewarp_audit.so")
    p = subprocess.run(timewarp_cmd("run", "--", "sh", "-c", 'LD_AUDIT=/nonexistent/x.so python3 -c "print(1)"'),
                       capture_output=True, text=True, env=env)
    assert "LD_AUDIT redirector" in p.stderr and "did not load" in p.stderr
