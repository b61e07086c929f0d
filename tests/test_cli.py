"""Bad input at the launcher: unknown GPUs, missing commands."""
import subprocess
import sys

import pytest

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


def test_a_trace_path_that_cannot_be_written_is_said_before_the_run(tmp_path):
    # before, the shim found out at its first snapshot and logged it; the run's trace was silently missing
    p = subprocess.run(timewarp_cmd("run", "--trace", str(tmp_path / "no-such-dir" / "t.json"), "--", "sh", "-c",
                                    f"touch {tmp_path / 'ran'}"), capture_output=True, text=True)
    assert p.returncode == 1
    assert "--trace" in p.stderr and "cannot write it: No such file or directory" in p.stderr
    assert not (tmp_path / "ran").exists()


def _gone(pid: int) -> bool:
    import os
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"   # a zombie has ended
    except OSError:
        return True


def test_a_process_the_program_leaves_behind_is_ended_with_the_run(tmp_path):
    """The run's clock lives in the launcher: a process the program started and left running would go on
    against a dead coordinator. The launcher is the run's subreaper and ends it (integrations/process_tree.py).
    The process blocks off the clock (cat opening a FIFO no one writes): a `sleep 300` would end by itself while
    the launcher waits for leftovers to settle, its 300 s passing on the virtual clock."""
    pidfile, fifo = tmp_path / "pid", tmp_path / "fifo"
    p = subprocess.run(timewarp_cmd("run", "--", "sh", "-c",
                                    f"mkfifo {fifo}; cat {fifo} > /dev/null & echo $! > {pidfile}; exit 3"),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 3, p.stderr[-2000:]
    pid = int(pidfile.read_text())
    assert _gone(pid), f"cat {pid} still running after the run"
    assert f"ended 1 process(es) sh left running ({pid})" in p.stderr, p.stderr[-2000:]


def test_a_helper_that_ends_by_itself_after_the_program_is_not_reported_as_left_running(tmp_path):
    """Python's multiprocessing resource tracker (started by vLLM's spawned engine) outlives the program by a
    few milliseconds; the launcher lets it end by itself (LEFTOVER_SETTLE_S) instead of reporting it as a
    process the program left running, which every vLLM benchmark's output began with."""
    pidfile = tmp_path / "pid"
    prog = ("import multiprocessing as mp\n"
            "from multiprocessing import resource_tracker as rt\n"
            "s = mp.get_context('spawn').Semaphore()\n"
            "rt.ensure_running()\n"
            f"open({str(pidfile)!r}, 'w').write(str(rt._resource_tracker._pid))\n")
    p = subprocess.run(timewarp_cmd("run", "--", sys.executable, "-c", prog),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    pid = int(pidfile.read_text())
    assert _gone(pid), f"resource tracker {pid} still running after the run"
    assert "left running" not in p.stderr, p.stderr[-2000:]


def test_a_program_that_ignores_the_signal_is_killed_with_its_children_after_the_grace(tmp_path):
    """SIGTERM to `timewarp run` alone (a process manager) is passed to the program; one that ignores it (vLLM's
    server waits without end for its clients' connections to close) is killed, with every process it started,
    TIMEWARP_STOP_GRACE_S real seconds later."""
    import os
    import signal
    import time
    prog = tmp_path / "stubborn.py"
    prog.write_text("import signal, subprocess, sys\n"
                    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                    "child = subprocess.Popen(['cat'], stdin=subprocess.PIPE)\n"
                    f"open({str(tmp_path / 'pids')!r}, 'w').write(f'{{child.pid}}\\n')\n"
                    "print('ready', flush=True)\n"
                    "sys.stdin.read()\n")   # blocks: nobody writes or closes it
    env = dict(os.environ, TIMEWARP_STOP_GRACE_S="2")
    p = subprocess.Popen(timewarp_cmd("run", "--", sys.executable, str(prog)), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert p.stdout.readline().strip() == "ready"
        t0 = time.monotonic()
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=60)
        took = time.monotonic() - t0
    finally:
        if p.poll() is None:
            p.kill()
    err = p.stderr.read()
    assert rc == 128 + signal.SIGKILL, (rc, err[-2000:])   # the program's own status: killed
    assert 2 <= took < 30, took
    assert "still running 2 s after the signal; killing it and every process it started" in err, err[-2000:]
    child = int((tmp_path / "pids").read_text())
    assert _gone(child), f"the program's child {child} outlived the run"


def test_gpus_lists_the_catalog():
    p = subprocess.run(timewarp_cmd("gpus"), capture_output=True, text=True)
    assert p.returncode == 0
    assert "NVIDIA H200" in p.stdout and "B200" in p.stdout


def test_each_gpu_says_what_its_predictions_were_checked_against():
    # a user choosing a card must know whether its figures were checked on that card: the H200 is the
    # profiled card, the H100 was checked by transfer, the A100 and B200 never were
    p = subprocess.run(timewarp_cmd("gpus"), capture_output=True, text=True)
    assert p.returncode == 0
    listed = dict(line.strip().split(": ", 1) for line in p.stdout.split("Accuracy:")[1].splitlines() if line.strip())
    assert set(listed) == {"H200", "H100", "A100", "B200"}
    assert "profiled card" in listed["H200"] and "checked on a real H100" in listed["H100"]
    for key in ("A100", "B200"):
        assert f"never checked on a real {key}" in listed[key]
    prog = "import torch; torch.ones(1 << 20, device='cuda').sum().item()"
    for key, said in (("A100", "never checked on a real A100"), ("H200", "the profiled card")):
        r = subprocess.run(timewarp_cmd("run", "--gpu", key, "--", sys.executable, "-c", prog), capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        assert "accuracy on this GPU: " in r.stderr and said in r.stderr, r.stderr[-2000:]


def test_a_missing_redirector_is_explained():
    import os
    env = dict(os.environ, LD_AUDIT="/nonexistent/libtimewarp_audit.so")
    p = subprocess.run(timewarp_cmd("run", "--", "sh", "-c", 'LD_AUDIT=/nonexistent/x.so python3 -c "print(1)"'),
                       capture_output=True, text=True, env=env)
    assert "LD_AUDIT redirector" in p.stderr and "did not load" in p.stderr


def _killed_program(tmp_path, seconds: float, midway: str = "def midway(): pass"):
    """A program that launches small kernels for `seconds` of real time, then kills itself (SIGKILL: no exit
    path runs), as vLLM's engine process ends. `midway`: the source of a function midway(), called once,
    halfway; launching goes on for half of `seconds` after it returns."""
    import textwrap
    prog = tmp_path / "killed.py"
    prog.write_text(textwrap.dedent(f"""
        import json, os, signal, torch
        def up():  # real time (/proc/uptime is not virtualised): snapshots are taken on it
            return float(open("/proc/uptime").read().split()[0])
    """) + textwrap.dedent(midway) + textwrap.dedent(f"""
        a = torch.randn(256, 256, device="cuda")
        u0 = up()
        end = u0 + {seconds}
        half = False
        while up() < end:
            for _ in range(5000):
                a.add_(1)
            if not half and up() - u0 > {seconds} / 2:
                half = True
                midway()
                # midway() may itself take long on a slow machine: launching goes on for the second half anyway,
                # so snapshots are still taken after it
                end = max(end, up() + {seconds} / 2)
        os.kill(os.getpid(), signal.SIGKILL)
    """))
    return prog


def test_a_killed_process_still_appears_in_the_report(tmp_path):
    """vLLM kills its engine process at shutdown: its last snapshot stands in for the report line it never
    wrote."""
    import json
    prog = _killed_program(tmp_path, 3)
    report = tmp_path / "report.jsonl"
    import sys
    p = subprocess.run(timewarp_cmd("run", "--report", str(report), "--", sys.executable, str(prog)),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 137, p.stderr[-2000:]
    recs = [json.loads(l) for l in report.read_text().splitlines() if l.strip()]
    killed = [r for r in recs if r.get("killed")]
    assert killed and killed[0]["devices"][0]["kernels"] > 0
    assert "killed: last snapshot" in p.stderr
    assert not list(tmp_path.glob("report.jsonl.*.live"))


def test_a_killed_processs_trace_is_its_snapshots_appended(tmp_path):
    """A process that never exits keeps the trace its running snapshots wrote, valid JSON and complete up to
    the last snapshot (shim_c/core/trace.c: a writer thread appends each snapshot's new records and closes
    the JSON again). Halfway the program itself reads the trace written so far: valid, and shorter than the
    final one, which only appends can have made."""
    import json
    import os
    import sys
    seen = tmp_path / "midway.txt"
    prog = _killed_program(tmp_path, 4.5, midway=f"""
        def midway():   # retried: a reader during an append sees a partial file; it is whole between appends
            for _ in range(1000):
                try:
                    n = len(json.load(open(os.environ["TIMEWARP_TRACE"]))["traceEvents"])
                    break
                except ValueError:
                    pass
            open({str(seen)!r}, "w").write(str(n))
    """)
    trace = tmp_path / "trace.json"
    env = dict(os.environ, TIMEWARP_TRACE_SNAPSHOT_S="1")   # a snapshot every second of real time, not every 20
    p = subprocess.run(timewarp_cmd("run", "--trace", str(trace), "--", sys.executable, str(prog)),
                       capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 137, p.stderr[-2000:]
    # valid JSON: each append re-closes it, and the launcher closes one the kill cut mid-append
    events = json.loads(trace.read_text())["traceEvents"]
    midway = int(seen.read_text())
    assert 0 < midway < len(events), (midway, len(events))
    adds = [e for e in events if "AddFunctor" in e["name"] or "add" in e["name"].lower()]
    assert len(adds) > 3 * 4096, len(adds)
    ts = [e["ts"] for e in adds]
    assert ts == sorted(ts)
    assert not list(tmp_path.glob("trace.json.*.tmp"))


def test_a_process_appends_to_a_trace_another_process_left_cut(tmp_path):
    """The processes of a run append to one trace under a lock (shim_c/core/trace.c). One killed inside an
    append leaves the file cut in a record; the next process's append starts after the last whole record,
    keeps what came before and leaves valid JSON, its own kernels after the other's."""
    import json
    import sys
    import textwrap
    trace = tmp_path / "trace.json"
    prog = tmp_path / "after_cut.py"
    prog.write_text(textwrap.dedent(f"""
        import os, torch
        # a sibling's trace, killed inside its third record, before this process launched anything
        head = '{{"displayTimeUnit":"ns","traceEvents":[\\n'
        rec = '{{"ph":"X","pid":1,"tid":7,"ts":0,"dur":1,"name":"sibling","args":{{"grid":[1,1,1]}}}}\\n'
        open(os.environ["TIMEWARP_TRACE"], "w").write(head + rec + "," + rec + ',{{"ph":"X","pid":1,"na')
        a = torch.ones(64, device="cuda")
        for _ in range(3):
            a.mul_(2)
        torch.cuda.synchronize()
        print(a[0].item())
    """))
    p = subprocess.run(timewarp_cmd("run", "--trace", str(trace), "--", sys.executable, str(prog)),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.split()[-1] == "8.0"
    names = [e["name"] for e in json.loads(trace.read_text())["traceEvents"]]
    assert names[:2] == ["sibling", "sibling"], names
    assert sum("mul" in n.lower() for n in names[2:]) == 3, names


def test_a_trace_cut_by_a_kill_is_closed_after_its_last_whole_record(tmp_path):
    """vLLM kills its engine core whenever it likes, also while the trace writer thread appends: the launcher
    cuts the trace after the last whole record and closes the JSON; a whole trace is left as it is, and a
    head cut by the kill becomes an empty trace."""
    import json
    from timewarp.integrations.launcher import close_trace
    head = '{"displayTimeUnit":"ns","traceEvents":[\n'
    recs = [("," if i else "") + json.dumps({"ph": "X", "name": f"k{i}", "args": {"grid": [i, 1, 1]}})
            for i in range(3)]
    whole = head + "".join(r + "\n" for r in recs)
    assert whole.count("}}\n") == 3
    t = tmp_path / "trace.json"
    t.write_text(whole + "]}\n")
    assert close_trace(t) is None and json.loads(t.read_text())["traceEvents"][2]["name"] == "k2"
    t.write_text(whole + ',{"ph":"X","name":"k3","args":{"gri')   # killed inside the fourth record
    assert "last whole record" in close_trace(t)
    assert [e["name"] for e in json.loads(t.read_text())["traceEvents"]] == ["k0", "k1", "k2"]
    t.write_text(head + '{"ph":"X","na')   # not one whole record
    close_trace(t)
    assert json.loads(t.read_text())["traceEvents"] == []
    t.write_text(head[:10])   # killed inside the head
    close_trace(t)
    assert json.loads(t.read_text())["traceEvents"] == []


def test_validate_names_the_gpus_it_has_measurements_for():
    p = subprocess.run(timewarp_cmd("validate", "--gpu", "A100"), capture_output=True, text=True)
    assert p.returncode == 1
    assert "no real measurements stored for A100" in p.stderr and "H200" in p.stderr


def _bench_dir(d, hits_by_case):
    """A folder as emulated_vllm_cases.sh writes it, reduced to what the prefix-cache table reads: marks.txt
    and the server's cumulative counters after each case."""
    d.mkdir()
    q = h = 0.0
    marks = []
    for k, rate in hits_by_case.items():
        q += 1000
        h += 1000 * rate
        marks += [f"case{k} start 0", f"case{k} end 1"]
        (d / f"metrics_case{k}.txt").write_text(f'vllm:prefix_cache_queries_total{{engine="0"}} {q}\n'
                                                f'vllm:prefix_cache_hits_total{{engine="0"}} {h}\n')
    (d / "marks.txt").write_text("\n".join(marks) + "\n")
    return d


def _ttft_run(d, ttft_by_case):
    """A bench folder (_bench_dir, no prefix-cache hits) whose cases have these mean TTFTs, TPOT 5 ms and 100
    output tokens/s."""
    import json
    d = _bench_dir(d, {k: 0.0 for k in ttft_by_case})
    for k, ttft in ttft_by_case.items():
        (d / f"case{k}.json").write_text(json.dumps({"mean_ttft_ms": ttft, "mean_tpot_ms": 5.0,
                                                     "output_throughput": 100.0}))
    return d


def test_bench_compare_names_cases_whose_prefix_cache_state_differs(tmp_path):
    """A case whose emulated prefix-cache hit rate is far from every real run's saw other prompts before it
    (cases 11-14 run after 7-10 on one server: 73% hits against 0.4%): its TTFT is not comparable, and the
    table says so instead of printing a silently wrong error."""
    from timewarp.integrations import bench_compare as bc

    real = [_bench_dir(tmp_path / "real1", {11: 0.004, 12: 0.50}), _bench_dir(tmp_path / "real2", {11: 0.004, 12: 0.52})]
    same = bc.prefix_table(_bench_dir(tmp_path / "emu_same", {11: 0.004, 12: 0.51}), real)
    assert not any("WARNING" in line for line in same), same
    other = bc.prefix_table(_bench_dir(tmp_path / "emu_other", {11: 0.734, 12: 0.50}), real)
    assert "WARNING: case(s) 11:" in other[-1], other


def test_bench_compare_reference_leaves_out_real_runs_with_another_prefix_cache(tmp_path):
    """A real run of a case whose prefix cache served another share of the prompt tokens than the other
    real runs' (lease q ran case 1 after 13 and 14: 93.8% hits against 0%) measured another workload: the
    reference's mean leaves it out, and says so."""
    import json

    from timewarp.integrations import bench_compare as bc

    dirs = []
    for name, hits, ttft in (("a", 0.0, 20.0), ("b", 0.01, 22.0), ("c", 0.938, 14.0)):
        d = _bench_dir(tmp_path / name, {1: hits})
        (d / "case1.json").write_text(json.dumps({"mean_ttft_ms": ttft, "mean_tpot_ms": 5.0, "output_throughput": 200.0}))
        dirs.append(d)
    ref = bc.real_reference(dirs)
    assert ref[1]["mean_ttft_ms_runs"] == [20.0, 22.0] and ref[1]["mean_ttft_ms"] == 21.0, ref[1]
    left_out = bc.reference_runs(dirs)[1]
    assert len(left_out) == 1 and left_out[0].startswith("c: case 1 (93.8%"), left_out


def test_bench_compare_sets_a_first_request_that_paid_a_one_time_cost_apart(tmp_path):
    """vLLM's V1 runner compiles a Triton kernel at its first request after start-up: on the lease's fresh host
    that request's TTFT was 566-585 ms against 37 for the others (vllm_32b_2026-12-03a, -c), a cache load here.
    The mean TTFT then says nothing of the others: the table gives the first request and the rest apart, and
    says nothing for cases without such an outlier."""
    import json

    from timewarp.integrations import bench_compare as bc

    def case(d, ttfts):
        (d / "case1.json").write_text(json.dumps({"mean_ttft_ms": 1e3 * sum(ttfts) / len(ttfts), "mean_tpot_ms": 18.0,
                                                   "output_throughput": 50.0, "ttfts": ttfts}))
        return d

    real = [case(_bench_dir(tmp_path / "real", {1: 0.0}), [0.585, 0.038, 0.037, 0.039, 0.038])]
    (real[0] / "serve.log").write_text("WARNING [jit_monitor.py:106] Triton kernel JIT compilation during inference: k\n")
    emu = case(_bench_dir(tmp_path / "emu", {1: 0.0}), [0.068, 0.036, 0.036, 0.037, 0.035])
    lines = bc.first_request_table(emu, real)
    row = next(line for line in lines if line.startswith("| 1 |"))
    assert row == "| 1 | 585 | 68 | 38.00 | 36.00 | -5.3% |", row
    assert "real 1; emulated 0" in lines[-1], lines
    calm = case(_bench_dir(tmp_path / "calm", {1: 0.0}), [0.040, 0.038, 0.037, 0.039, 0.038])
    assert bc.first_request_table(calm, [case(_bench_dir(tmp_path / "real2", {1: 0.0}), [0.039, 0.038, 0.037, 0.039])]) == []


def test_bench_compare_splits_ttft_into_the_servers_phases(tmp_path):
    """vLLM's request metrics are cumulative over the server's life: each case's phases are the counters
    after it less those after the case before it, per request, and the client's TTFT less the server's is
    the HTTP path around the server."""
    import json

    from timewarp.integrations import bench_compare as bc

    def run(name, cases):   # case -> (requests, server ttft, queued, scheduled-to-first-token, client ttft) in ms
        d = tmp_path / name
        d.mkdir()
        tot = {n: [0.0, 0.0] for n, _ in bc.PHASES}
        marks = []
        for k, (n, ttft, queued, prefill, client) in cases.items():
            for (metric, _), ms in zip(bc.PHASES, (ttft, queued, prefill)):
                tot[metric][0] += n * ms / 1e3
                tot[metric][1] += n
            marks += [f"case{k} start 0", f"case{k} end 1"]
            (d / f"metrics_case{k}.txt").write_text("".join(
                f'{m}_sum{{engine="0"}} {s}\n{m}_count{{engine="0"}} {c}\n' for m, (s, c) in tot.items())
                + 'vllm:prefix_cache_queries_total{engine="0"} 1000\nvllm:prefix_cache_hits_total{engine="0"} 0\n')
            (d / f"case{k}.json").write_text(json.dumps({"mean_ttft_ms": client, "mean_tpot_ms": 5.0,
                                                         "output_throughput": 100.0}))
        (d / "marks.txt").write_text("\n".join(marks) + "\n")
        return d

    real = run("real", {1: (16, 16.0, 0.04, 11.3, 19.0), 2: (64, 257.0, 4.9, 206.0, 279.0)})
    emu = run("emu", {1: (16, 14.0, 0.06, 10.5, 16.5), 2: (64, 258.0, 2.4, 205.0, 275.0)})
    # the emulated run's timeline: case 2's three requests (after a warm-up call) reach the API server's
    # handler in another order than they started, 4 ms after them on average (the way in)
    (emu / "marks.txt").write_text("case1 start 0\ncase1 end 1\ncase2 start 10000000000\ncase2 end 20000000000\n")
    js = json.loads((emu / "case2.json").read_text())
    js["start_times"] = [11.000, 11.001, 11.010]
    (emu / "case2.json").write_text(json.dumps(js))
    (emu / "timeline").mkdir()
    calls = [10.5, 11.004, 11.012, 11.007]   # s; the first is the warm-up request
    (emu / "timeline" / "timeline-7.tsv").write_text("".join(
        f"api.request\t{int(t * 1e9)}\t{int(t * 1e9) + 1000}\t7\t\n" for t in calls))
    ph = bc.ttft_phases(emu)
    assert abs(ph[2]["way in"] - 4.0) < 1e-6 and abs(ph[2]["way out"] - (17.0 - 4.0)) < 1e-6, ph[2]
    assert "way in" not in ph[1]   # no timeline events in case 1's span
    assert abs(ph[2]["server TTFT"] - 258.0) < 1e-6 and abs(ph[2]["queued"] - 2.4) < 1e-6, ph
    assert abs(ph[2]["before queue"] - (258.0 - 2.4 - 205.0)) < 1e-6
    assert abs(ph[1]["client less server"] - 2.5) < 1e-6 and abs(ph[2]["client less server"] - 17.0) < 1e-6
    table = bc.phase_table(emu, [real])
    assert table[3].startswith("| 1 (1) | 16.00 | 14.00 |") and table[4].startswith("| 2 (1) | 257.00 | 258.00 |"), table


def test_bench_compare_reference_follows_the_emulated_runs_prefix_cache_state(tmp_path):
    """Case 8 run after 14 finds 47.6% of its prompt tokens cached, after 7 about 3%: where real runs were
    measured in the emulated run's state, those are its reference, although most real runs were in the other;
    where none were, the median state's runs stay the reference. A run without the server's counters (the
    earliest leases) counts as one in the median state: it is not the reference of another state."""
    import json

    from timewarp.integrations import bench_compare as bc

    dirs = []
    for name, hits, ttft in (("a", 0.028, 1000.0), ("b", 0.028, 1100.0), ("c", 0.012, 1200.0),
                             ("t", 0.476, 570.0), ("u", 0.476, 890.0), ("old", None, 1050.0)):
        d = _bench_dir(tmp_path / name, {8: hits}) if hits is not None else tmp_path / name
        d.mkdir(exist_ok=True)
        (d / "case8.json").write_text(json.dumps({"mean_ttft_ms": ttft, "mean_tpot_ms": 15.0, "output_throughput": 1e4}))
        dirs.append(d)
    after_14 = bc.real_reference(dirs, {8: 0.476})
    assert after_14[8]["mean_ttft_ms_runs"] == [570.0, 890.0] and after_14[8]["mean_ttft_ms"] == 730.0
    assert bc.real_reference(dirs, {8: 0.03})[8]["mean_ttft_ms_runs"] == [1000.0, 1100.0, 1200.0, 1050.0]
    assert bc.real_reference(dirs, {8: 0.30})[8]["mean_ttft_ms_runs"] == [1000.0, 1100.0, 1200.0, 1050.0]
    left_out = bc.reference_runs(dirs, {8: 0.476})[1]
    assert len(left_out) == 4 and all("the emulated run's 47.6%" in x for x in left_out), left_out
    assert any(x.startswith("old: case 8 (no counters, taken as 2.8%") for x in left_out), left_out
    assert bc.reference_runs(dirs, {8: 0.476})[2] == {("a", 8), ("b", 8), ("c", 8), ("old", 8)}


def test_proc_cpu_lists_a_process_tree_with_its_cpu_time(tmp_path):
    """integrations/bench/cases.sh's proc_cpu, which the vLLM case scripts call before and after each case:
    one line per process under the root (the root included, nothing outside it), with the CPU seconds each
    has used. A child that burns CPU shows it; a sleeping one shows about none."""
    import sys
    from pathlib import Path

    import timewarp.integrations as integ
    cases = Path(integ.__file__).parent / "bench" / "cases.sh"
    script = f"""
. {cases}
sleep 30 & idle=$!
{sys.executable} -c "import time; t = time.process_time()
while time.process_time() - t < 0.6: pass
time.sleep(30)" & busy=$!
sleep 1.5
proc_cpu {sys.executable} "case1 end" $$
kill $idle $busy
"""
    p = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    rows = [line.split() for line in p.stdout.splitlines()]
    assert all(r[:2] == ["case1", "end"] and len(r) == 6 for r in rows), rows   # label pid comm user sys
    by_comm: dict[str, float] = {}
    for r in rows:
        by_comm[r[3]] = max(by_comm.get(r[3], 0.0), float(r[4]) + float(r[5]))
    assert {"bash", "sleep"} <= set(by_comm), rows
    assert any(c.startswith("python") and cpu >= 0.5 for c, cpu in by_comm.items()), rows
    assert by_comm["sleep"] < 0.1
    assert str(__import__("os").getpid()) not in [r[2] for r in rows]   # the test's own process is outside


def _cpu_lines(label, procs):
    return "".join(f"{label} {pid} {comm} {u} 0.00{extra}\n" for pid, comm, u, extra in procs)


def test_bench_compare_cpu_per_process_over_the_main_run(tmp_path):
    """proc_cpu.txt's lines at each case's and each main run's edges: the API server (the busiest python
    process of the server's tree), the EngineCore and the bench client (a python process outside that tree),
    each one's CPU over the main run, and on an emulated run the virtual charge (Python's plus native's)."""
    from timewarp.integrations import bench_compare as bc

    def write(d, extra):
        d.mkdir()
        e = (lambda py, nat: f" 0 {py} 0 {nat} 0 0") if extra else (lambda py, nat: "")
        text = (_cpu_lines("case1 start", [(10, "python3", 5.0, e(1, 0)), (11, "python3", 0.1, e(0, 0)),
                                           (12, "VLLM::EngineCor", 20.0, e(5, 0))])
                + _cpu_lines("case1 main_start", [(10, "python3", 5.5, e(1.2, 0.1)), (12, "VLLM::EngineCor", 21.0, e(5.3, 0)),
                                                  (20, "python3", 30.0, e(9, 0)), (21, "bash", 0.0, e(0, 0))])
                + _cpu_lines("case1 main_end", [(10, "python3", 7.5, e(2.0, 0.4)), (12, "VLLM::EngineCor", 25.0, e(6.3, 0)),
                                                (20, "python3", 31.0, e(9.5, 0)), (21, "bash", 0.0, e(0, 0))])
                + _cpu_lines("case1 end", [(10, "python3", 8.0, e(2.1, 0.4)), (11, "python3", 0.1, e(0, 0)),
                                           (12, "VLLM::EngineCor", 26.0, e(6.5, 0))]))
        (d / "proc_cpu.txt").write_text(text + "case1 client user=30.0 sys=2.0 wall=40.0\n")
        return d

    real, emu = write(tmp_path / "real", False), write(tmp_path / "emu", True)
    cpu = bc.proc_cpu(emu)["case1"]
    assert cpu["main"]["API server"] == pytest.approx([2.0, 1.1]) and cpu["main"]["client"] == pytest.approx([1.0, 0.5])
    assert cpu["main"]["EngineCore"] == pytest.approx([4.0, 1.0]) and cpu["whole"]["API server"] == pytest.approx([3.0, 1.5])
    assert "client" not in cpu["whole"]
    assert bc.proc_cpu(real)["case1"]["main"]["API server"] == pytest.approx([2.0])
    table = bc.cpu_table(emu, [real])
    assert table[3] == "| case1 | main | 2.00 (1) | 2.00 | 1.10 | 4.00 (1) | 4.00 | 1.00 | 1.00 (1) | 1.00 | 0.50 |", table


def test_bench_compare_gives_the_share_of_cpu_spent_in_the_kernel(tmp_path):
    """proc_cpu.txt's user and system columns over the main run: the share of each process's CPU in the kernel,
    real (runs pooled) and here, where the pace charges both alike (the API server 3-10% on the H200 hosts,
    13-24% here)."""
    from timewarp.integrations import bench_compare as bc

    def write(name, api, client):
        d = tmp_path / name
        d.mkdir()
        rows = []
        for edge, k in (("start", 0), ("main_start", 0), ("main_end", 1), ("end", 1)):
            rows.append(f"case3 {edge} 10 python3 {api[0] * k} {api[1] * k}")
            rows.append(f"case3 {edge} 12 VLLM::EngineCor {5.0 * k} {0.1 * k}")
            if edge.startswith("main"):
                rows.append(f"case3 {edge} 20 python3 {client[0] * k} {client[1] * k}")
        (d / "proc_cpu.txt").write_text("\n".join(rows) + "\n")
        return d

    real = [write("r1", (3.6, 0.3), (1.9, 0.2)), write("r2", (3.2, 0.3), (2.1, 0.3))]
    emu = write("emu", (8.0, 2.0), (4.5, 1.5))
    table = bc.system_table(emu, real)
    assert table[3] == "| case3 | 8.1% | 20.0% | 11.1% | 25.0% |", table


def test_main_marks_notes_the_main_runs_edges(tmp_path):
    """cases.sh's main_marks passes the bench client's output through and, at the lines where its main run
    starts and its results print, notes the real time (wall.txt) and every process's CPU under the root
    (proc_cpu.txt)."""
    import sys
    from pathlib import Path

    import timewarp.integrations as integ
    cases = Path(integ.__file__).parent / "bench" / "cases.sh"
    script = f"""
. {cases}
printf 'warming up\\nStarting main benchmark run...\\nprogress\\n============ Serving Benchmark Result ============\\nMean TTFT (ms): 1\\n' \\
  | main_marks {sys.executable} case7 $$ {tmp_path}
"""
    p = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["warming up", "Starting main benchmark run...", "progress",
                                     "============ Serving Benchmark Result ============", "Mean TTFT (ms): 1"]
    wall = [line.split()[:2] for line in (tmp_path / "wall.txt").read_text().splitlines()]
    assert wall == [["case7", "main_start"], ["case7", "main_end"]]
    rows = [line.split() for line in (tmp_path / "proc_cpu.txt").read_text().splitlines()]
    assert {r[1] for r in rows} == {"main_start", "main_end"} and any(r[3] == "bash" for r in rows), rows


def test_bench_compare_spread_counts_cases_within_the_bound(tmp_path):
    """Over several emulated runs, the spread table gives each error's mean and range, and counts the cases
    within 5% on all three metrics on the mean and in each run: one run can miss where the mean does not."""
    from timewarp.integrations import bench_compare as bc

    real = [_ttft_run(tmp_path / "real", {1: 100.0, 2: 100.0})]
    emulated = [_ttft_run(tmp_path / "e1", {1: 108.0, 2: 120.0}), _ttft_run(tmp_path / "e2", {1: 96.0, 2: 112.0})]
    lines = bc.spread(emulated, real)
    assert lines[3].startswith("| 1 | +2.0% | -4.0% .. +8.0% |") and lines[4].startswith("| 2 | +16.0% |"), lines
    assert lines[-1] == "within 5% on all three metrics: on the mean over the runs, case(s) 1; per run, 0 / 1 case(s)", lines


def test_bench_compare_gives_a_case_run_twice_on_one_server_its_own_row(tmp_path):
    """cases.sh names a case's second run on one server caseKr (the H100's case 31: 1,457 ms of TTFT first,
    865 ms repeated, with 0.5% and 49% of its prompt tokens from the prefix cache): the repeat is its own row,
    compared with the real repeat, after K and before K+1, in the run and the prefix-cache tables alike."""
    from timewarp.integrations import bench_compare as bc

    real = _ttft_run(tmp_path / "real", {3: 200.0, "3r": 100.0, 4: 50.0})
    emu = _ttft_run(tmp_path / "emu", {3: 210.0, "3r": 95.0, 4: 50.0})
    rows = [line.split(" | ")[:2] for line in bc.spread([emu], [real])[3:-1]]
    assert rows == [["| 3", "+5.0%"], ["| 3r", "-5.0%"], ["| 4", "+0.0%"]], rows
    assert sorted(bc.prefix_hits(emu)) == [3, bc.case_key("3r"), 4]
    assert bc.case_key("3r") != 3 and bc.case_key("3") == 3 and str(bc.case_key("31r")) == "31r"


def test_bench_compare_measures_the_real_cards_own_spread(tmp_path):
    """The floor under a single run's error: one run's standard deviation per case on each side, and each real
    lease against the mean of the other leases (leave one out), counted as the spread table counts an emulated
    run against the real mean."""
    from timewarp.integrations import bench_compare as bc

    # case 1: a (100) against b and c's mean 110 is -9%, b (100) against 110 too, c (120) against 100 is +20%;
    # case 2: 100, 102, 104 are each within 5% of the others' mean; case 3 is not in the emulated runs
    real = [_ttft_run(tmp_path / "real_a", {1: 100.0, 2: 100.0, 3: 50.0}),
            _ttft_run(tmp_path / "real_b", {1: 100.0, 2: 102.0, 3: 90.0}),
            _ttft_run(tmp_path / "real_c", {1: 120.0, 2: 104.0})]
    emulated = [_ttft_run(tmp_path / "e1", {1: 90.0, 2: 100.0}), _ttft_run(tmp_path / "e2", {1: 110.0, 2: 100.0})]
    lines = bc.reproducibility(emulated, real)
    assert lines[3].startswith("| 1 | 10.8% (3) | 14.1% (2) | 0.0% (3) |"), lines
    assert lines[4].startswith("| 2 | 2.0% (3) | 0.0% (2) |"), lines
    assert len(lines) == 6 and lines[-1].endswith("3 of 6 (real_a 1/2, real_b 1/2, real_c 1/2)"), lines


def test_the_report_says_which_predictor_layer_timed_the_gpu_time(tmp_path):
    """Each device's busy time split by the layer that timed it (graph replays by their nodes): a measured
    GEMM shape replayed from a graph is `exact`, a kernel nobody recorded (torch's cumsum on int16) the
    analytical roofline; the summary prints the shares, and `timewarp vllm-bench` notes a run whose GPU time
    rests on the roofline for 5% or more."""
    import json
    import sys
    import textwrap

    from timewarp.integrations.launcher import layer_shares, summarize
    from timewarp.integrations.vllm_bench import coverage_notes

    prog = tmp_path / "layers.py"
    prog.write_text(textwrap.dedent("""
        import torch, torch.nn.functional as F
        w = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
        x = torch.randn(1024, 4096, device="cuda", dtype=torch.bfloat16)
        F.linear(x, w)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(10):
                F.linear(x, w)
        g.replay()
        torch.cumsum(torch.ones(1 << 22, device="cuda", dtype=torch.int16), 0)
        torch.cuda.synchronize()
    """))
    report = tmp_path / "report.jsonl"
    p = subprocess.run(timewarp_cmd("run", "--report", str(report), "--", sys.executable, str(prog)),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    recs = [json.loads(l) for l in report.read_text().splitlines() if l.strip()]
    dev = recs[0]["devices"][0]
    by = dev["busy_by_layer"]
    assert by["exact"] > 10 * 40e-6, by                   # eleven GEMMs of about 45 us each
    assert by.get("roofline", 0) > 0, by                  # the cumsum's kernels
    assert sum(by.values()) == pytest.approx(dev["busy_s"], rel=0.05)
    shares = layer_shares(recs)
    assert list(shares)[0] == "exact" and sum(shares.values()) == pytest.approx(1.0)
    assert "timed by: exact" in "\n".join(summarize(recs)) and "timed by: exact" in p.stderr
    # vllm-bench's note: only when the roofline timed 5% or more of the GPU time
    roof = {"pid": 1, "devices": [{"busy_by_layer": {"exact": 0.90, "roofline": 0.10}}]}
    (tmp_path / "r1.jsonl").write_text(json.dumps(roof) + "\n")
    assert "10% of the GPU time was timed by the analytical roofline" in coverage_notes(tmp_path / "r1.jsonl")[0]
    roof["devices"][0]["busy_by_layer"]["roofline"] = 0.02
    (tmp_path / "r2.jsonl").write_text(json.dumps(roof) + "\n")
    assert coverage_notes(tmp_path / "r2.jsonl") == []


def test_a_vllm_start_up_that_failed_in_flashinfers_build_says_so(tmp_path):
    # the B200's default attention backend compiles CUDA code on first use; its failure sits deep in a
    # traceback of the engine's start-up, which vllm-bench's message ends with
    from timewarp.integrations.vllm_bench import known_cause

    log = tmp_path / "serve.log"
    log.write_text("(EngineCore pid=1) ERROR ... RuntimeError: Ninja build failed. Ninja output:\n"
                   "fatal error: cublasLt.h: No such file or directory\n"
                   "RuntimeError: Engine core initialization failed.\n")
    assert "FlashInfer" in known_cause(log) and "nvcc" in known_cause(log)
    log.write_text("RuntimeError: Engine core initialization failed.\n")
    assert known_cause(log) == ""
    assert known_cause(tmp_path / "missing.log") == ""


def test_latency_compare_sets_an_offline_batch_against_the_real_runs(tmp_path):
    """integrations/bench/vllm_latency_cases.sh writes vLLM's `bench latency` results as latency_B_I_O.json on
    both sides: the table gives the real mean, the emulated latency and its error per case, and a result that
    is not vLLM's JSON is named, not a traceback."""
    import json

    from timewarp.integrations import latency_compare as lc

    def folder(name, cases):
        d = tmp_path / name
        d.mkdir()
        for (b, i, o), lat in cases.items():
            (d / f"latency_{b}_{i}_{o}.json").write_text(json.dumps({"avg_latency": lat, "latencies": [lat * 0.99, lat * 1.01]}))
        return d

    emu = folder("emu", {(64, 128, 256): 2.1, (1, 512, 128): 0.5})
    real = [folder("r1", {(64, 128, 256): 2.0}), folder("r2", {(64, 128, 256): 2.2, (1, 512, 128): 0.625})]
    lines = lc.table(emu, real)
    assert lines[2].startswith("| 1 | 512 | 128 | 0.6250 | 0.5000 | -20.0% |"), lines
    assert lines[3].startswith("| 64 | 128 | 256 | 2.1000 (2..2.2) | 2.1000 | +0.0% |"), lines
    (real[0] / "latency_8_8_8.json").write_text("not json")
    with pytest.raises(SystemExit, match="latency_8_8_8.json: not a `vllm bench latency` result"):
        lc.load(real[0])
