#!/bin/bash
# The emulated side of the accuracy table (issue 5): the same `vllm serve` and `vllm bench serve` cases as
# integrations/bench/real_vllm_baseline.sh runs on the real H200, here under one `timewarp run`:
#     timewarp run -- integrations/bench/emulated_vllm_cases.sh OUT_DIR [CASES]
# then  python -m timewarp.integrations.bench_compare OUT_DIR  prints real vs emulated.
# Writes OUT_DIR/serve.log, bench.log, caseK.json (caseKr.json for a case named twice), marks.txt (each
# case's start and end on the virtual CLOCK_MONOTONIC), proc_cpu.txt (this machine's CPU time of the server's
# processes and the client per case, not paced), metrics_caseK.txt (the server's /metrics after the
# case) and wall.txt (real seconds per case, and the real times its main run started and ended, from
# /proc/uptime: the clocks inside the run are virtual).
set -u
OUT=$(mkdir -p "${1:?usage: emulated_vllm_cases.sh OUT_DIR [CASES]}" && cd "$1" && pwd)
CASES=${2:-"1 2 3 4 5 6"}
PY=${PYTHON:-python3}
PORT=${PORT:-8017}
# PYTHONSAFEPATH: run from a checkout, `python -m` would import the source folder timewarp/ (no integrations/
# in it) instead of the installed package, and vLLM's timewarp plugin would not load
export HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 PYTHONSAFEPATH=1
# what each process's CPU was charged in virtual time (shim_c/core/charge_log.c): proc_cpu.txt shows the
# totals of the server's processes and the client's at each case's and each main run's start and end
mkdir -p "$OUT/charge"
export TIMEWARP_CHARGE_DIR=$OUT/charge
. "$(dirname "$0")/cases.sh"  # SPEC, case_name, mono_ns, real, model_folder
model_folder "$(dirname "$0")/../models/llama3-8b-shape"   # MODEL, TOKENIZER
t0=$(real)
# SERVE_ARGS: more `vllm serve` arguments (word-split), as real_vllm_baseline.sh takes them; with
# "--tensor-parallel-size 2", run under `timewarp run --gpus 2`
$PY -m vllm.entrypoints.cli.main serve "$MODEL" --tokenizer "$TOKENIZER" --load-format dummy --port $PORT ${SERVE_ARGS:-} > "$OUT/serve.log" 2>&1 &
srv=$!
until $PY -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:$PORT/health', timeout=2).status==200 else 1)" 2>/dev/null; do
  kill -0 $srv 2>/dev/null || { echo "server died"; tail -20 "$OUT/serve.log"; exit 3; }
  sleep 2
done
echo "ready $(awk "BEGIN{print $(real) - $t0}") s wall" | tee "$OUT/wall.txt"
for k in $CASES; do
  name=$(case_name $k "$OUT")
  t1=$(real)
  echo "$name start $(mono_ns $PY)" >> "$OUT/marks.txt"
  proc_cpu $PY "$name start" $srv >> "$OUT/proc_cpu.txt"
  TIMEFORMAT="$name client user=%U sys=%S wall=%R"
  { time PYTHONUNBUFFERED=1 $PY -m vllm.entrypoints.cli.main bench serve --backend vllm --port $PORT --model "$MODEL" --tokenizer "$TOKENIZER" \
      $(dataset_args $k) --save-result --save-detailed --result-dir "$OUT" --result-filename $name.json 2>&1 \
    | main_marks $PY $name $$ "$OUT" >> "$OUT/bench.log" ; rc=${PIPESTATUS[0]} ; } 2>> "$OUT/proc_cpu.txt"
  proc_cpu $PY "$name end" $srv >> "$OUT/proc_cpu.txt"
  echo "$name rc=$rc $(awk "BEGIN{print $(real) - $t1}") s wall" | tee -a "$OUT/wall.txt"
  echo "$name end $(mono_ns $PY)" >> "$OUT/marks.txt"
  # the server's counters after the case (prefix-cache queries and hits, preemptions), as the real runs keep
  $PY -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$PORT/metrics', timeout=30).read().decode())" \
      > "$OUT/metrics_$name.txt" 2>/dev/null
done
kill -INT $srv; wait $srv
