# The `vllm bench serve` cases of issue 5's accuracy table, sourced by both sides of the comparison
# (real_vllm_baseline.sh on the H200, emulated_vllm_cases.sh under timewarp) so that they run the same ones.
# SPEC: case -> "C I O N" (max concurrency, input tokens, output tokens, prompts).
# Cases 1-4: the issue's table; 5-6: held-out checks (lengths and concurrencies used by no fit); 7-10: more
# held-out ones (added after every fit of 2026-11-30, to evaluate on workloads nothing was tuned to: long
# decodes at low concurrency, 256 concurrent requests, 3 K prompts, a middle case); 11-14: held out from the
# message stamps of 2026-11-30 (shim_c/libc/message.c), which changed how bursts reach the engine: a burst of
# 96 mid-length prompts, two long prompts at a time, many short requests, 128 long decodes; 15-17: held out
# from the twentieth session's changes (chosen before they were measured): a middle concurrency with middle
# lengths, 64 long-ish prompts with short outputs, three long prompts with long decodes; 18-21: held out from
# the twenty-sixth session's changes (chosen before either side ran them): 40 short prompts with long outputs,
# six 2,048-token prompts at a time, 96 mid-length ones, 24 long prompts with long outputs; 22-24: the first
# open-loop cases (35th session, chosen before either side ran them): requests sent at RATE per second
# (Poisson arrivals, `--request-rate`) with lengths drawn within +-RATIO of I and O (`--random-range-ratio`):
# a light load of mid-length prompts, a load near the engine's capacity, a few long prompts of spread length;
# 25-28: held out from everything up to the thirty-seventh session (38th session, chosen before either side ran
# them): 4,096-token prompts (longer than any other case), 1,024-token decodes at a middle concurrency, an
# open-loop load of spread mid lengths at a high request rate, 200 concurrent short requests; 29-31: held out
# (45th session); 32-34: held out from everything up to the forty-sixth session (47th session, chosen before
# either side ran them): 80 streams of 1,200 tokens in and 200 out, 20 of 2,560-token prompts with 48-token
# outputs, an open-loop load of 30 requests per second of spread short prompts with mid outputs; 35-37: held out
# from everything up to the forty-eighth session (49th session, chosen before either side ran them): two streams of
# 3,584-token prompts, 112 streams of short prompts with 384-token decodes, an open-loop load of 6 requests per
# second of spread 1,536-token prompts; 38-40: held out from everything up to the forty-ninth session (50th session,
# chosen before either side ran them): 96 streams of 640-token prompts with 224-token decodes (decode batches in
# the 65-160 rows where the GEMM transfer leans high), 64 streams of 768-token prompts with 64-token outputs, an
# open-loop load of 12 requests per second of spread 768-token prompts with 160-token outputs.
# SPEC: case -> "C I O N [RATE RATIO]" (RATE and RATIO absent: all at once, fixed lengths).
declare -A SPEC=([1]="1 256 128 16" [2]="16 1024 128 64" [3]="64 512 256 192" [4]="128 2048 64 256" \
                 [5]="32 1536 96 96" [6]="8 384 320 32" \
                 [7]="4 128 512 16" [8]="256 256 128 512" [9]="48 3072 64 96" [10]="24 768 192 72" \
                 [11]="96 512 128 192" [12]="2 1024 256 12" [13]="48 256 64 144" [14]="128 256 256 256" \
                 [15]="12 640 160 48" [16]="64 1280 96 128" [17]="3 1792 384 9" \
                 [18]="40 256 192 120" [19]="6 2048 128 24" [20]="96 1024 160 192" [21]="24 1536 224 72" \
                 [22]="64 512 128 200 8 0.5" [23]="256 1024 256 300 24 0.3" [24]="8 2048 64 48 3 0.8" \
                 [25]="32 4096 128 64" [26]="16 512 1024 32" [27]="128 768 192 200 12 0.5" [28]="200 128 64 400" \
                 [29]="10 896 96 40" [30]="48 320 288 144" [31]="160 640 48 320" \
                 [32]="80 1200 200 160" [33]="20 2560 48 60" [34]="192 384 160 400 30 0.4" \
                 [35]="2 3584 96 10" [36]="112 192 384 224" [37]="48 1536 128 120 6 0.6" \
                 [38]="96 640 224 192" [39]="64 768 64 128" [40]="64 768 160 160 12 0.5")

# dataset_args K: `vllm bench serve`'s workload arguments for case K (the random dataset, --ignore-eos, its
# prompts and concurrency, and for an open-loop case its request rate and length spread), the same on both sides;
# vLLM seeds the lengths and the arrival times (--seed, 0 by default), so both sides send the same requests
dataset_args() {
  local C I O N RATE RATIO
  read -r C I O N RATE RATIO <<< "${SPEC[$1]}"
  echo "--dataset-name random --random-input-len $I --random-output-len $O --ignore-eos --num-prompts $N --max-concurrency $C" \
       ${RATE:+--request-rate $RATE} ${RATIO:+--random-range-ratio $RATIO}
}

# case_name K DIR: caseK, or caseKr when DIR already holds caseK.json (a repeated case keeps both results)
case_name() { if [ -f "$2/case$1.json" ]; then echo "case${1}r"; else echo "case$1"; fi; }

# mono_ns PY: CLOCK_MONOTONIC in ns (the virtual one under timewarp), the clock of the vLLM timeline
# (integrations/vllm_plugin/timeline.py): marks each case on it
mono_ns() { "$1" -c "import time; print(time.perf_counter_ns())"; }

# model_folder DEFAULT: MODEL (the environment's, else DEFAULT) as an absolute folder that holds a config.json,
# and TOKENIZER: that folder where it has its own tokenizer, else DEFAULT; exits 2 naming a folder without one
model_folder() {
  local default wanted
  default=$(cd "$1" && pwd)
  wanted=${MODEL:-$default}
  MODEL=$(cd "$wanted" 2>/dev/null && pwd)
  [ -f "$MODEL/config.json" ] || { echo "$(basename "$0"): MODEL=$wanted: not a model folder (no config.json)" >&2; exit 2; }
  # a folder's own tokenizer in any of the forms `timewarp vllm-bench` accepts (integrations/cli.py)
  TOKENIZER=$default
  for f in tokenizer.json tokenizer.model tokenizer_config.json tekken.json; do
    [ -f "$MODEL/$f" ] && { TOKENIZER=$MODEL; break; }
  done
}

# real: seconds since boot (/proc/uptime), a real clock that timewarp does not virtualize: wall times of the
# emulation itself
real() { cut -d' ' -f1 /proc/uptime; }

# proc_cpu PY LABEL ROOT_PID: one line per process of the tree under ROOT_PID (it included), "LABEL pid comm
# user_s sys_s" (the CPU time each has used so far), taken before and after each case: the API server's and the
# EngineCore's CPU per case (the bench client's comes from bash's `time` around it, as TIMEFORMAT lines).
# Under timewarp with TIMEWARP_CHARGE_DIR set (shim_c/core/charge_log.c), eight more columns: what the process's
# CPU was charged so far, s: Python's host CPU and its virtual charge, native code's host CPU and its virtual
# charge, time added for the real stack's host paths, host CPU before the clock's reading overhead came off,
# and where kernel time is priced apart (TIMEWARP_KERNEL_PRICE) the system time so priced and its charge
proc_cpu() {
  "$1" - "$2" "$3" <<'PYEOF'
import os, struct, sys
label, root = sys.argv[1], int(sys.argv[2])
tck = os.sysconf("SC_CLK_TCK")
stats = {}
for p in os.listdir("/proc"):
    if p.isdigit():
        try:
            s = open(f"/proc/{p}/stat").read()
        except OSError:
            continue
        comm, rest = s[s.index("(") + 1:s.rindex(")")], s[s.rindex(")") + 2:].split()
        stats[int(p)] = (comm, int(rest[1]), int(rest[11]), int(rest[12]))  # ppid, utime, stime
tree, grew = {root}, True
while grew:
    grew = False
    for pid, (_c, ppid, _u, _s) in stats.items():
        if ppid in tree and pid not in tree:
            tree.add(pid); grew = True
for pid in sorted(tree & stats.keys()):
    comm, _pp, u, s = stats[pid]
    extra = ""
    try:
        with open(f"{os.environ['TIMEWARP_CHARGE_DIR']}/charge.{pid}", "rb") as f:
            raw = f.read()
            extra = "".join(f" {v / 1e9:.3f}" for v in struct.unpack(f"<{len(raw) // 8}Q", raw[:len(raw) // 8 * 8]))
    except (KeyError, OSError, struct.error):
        pass
    print(f"{label} {pid} {comm.replace(' ', '_')} {u / tck:.2f} {s / tck:.2f}{extra}")
PYEOF
}

# main_marks PY NAME ROOT OUT: copies the bench client's output (stdin) to stdout; where its main run starts and
# where its results print, notes the real time (OUT/wall.txt: "NAME main_start UPTIME") and the CPU time of every
# process under ROOT (OUT/proc_cpu.txt, "NAME main_start ..." lines: the server's processes and the client's).
# The client's own start-up (imports, tokenizer, dataset: about 10 s on the emulation host) is neither the
# emulator's speed nor the work a case measures.
main_marks() {
  local line edge
  while IFS= read -r line; do
    edge=
    case "$line" in
      *"Starting main benchmark run"*) edge=main_start ;;
      *"Serving Benchmark Result"*) edge=main_end ;;
    esac
    if [ -n "$edge" ]; then
      echo "$2 $edge $(real)" >> "$4/wall.txt"
      proc_cpu "$1" "$2 $edge" "$3" >> "$4/proc_cpu.txt"
    fi
    printf '%s\n' "$line"
  done
}
