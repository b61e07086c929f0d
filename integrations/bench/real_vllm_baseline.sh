#!/bin/bash
# Real-H200 baseline for issue 5: vLLM 0.24.0 serving the Llama-3-8B-shaped model folder
# (integrations/models/llama3-8b-shape, --load-format dummy, all other defaults) and four
# `vllm bench serve` cases (random dataset, fixed lengths, --ignore-eos).
#
# Runs on the lent H200 (device `run` tool), from the repository root, after the parts written by
# ../shared/device/pack_site.sh .devpack 'vllm==0.24.0' were copied to /root/parts (one run per part).
# Writes to $OUT: serve.log, bench.log, caseK.json, startup.txt, marks.txt (each case's start and end on
# CLOCK_MONOTONIC), metrics_caseK.txt (the server's /metrics after each case), proc_cpu.txt (the CPU time of
# the server's processes before and after each case, and the bench client's; cases.sh's proc_cpu; and every
# process's, the client's included, where the client's main run starts and ends: cases.sh's main_marks),
# wall.txt (the real time of those two points).
#
# Env: PARTS (default /root/parts), BUDGET_S (seconds the whole script may take, default 450),
#      CASES (default "1 2 3 4"; a case named twice writes caseKr.json the second time),
#      MODEL (default integrations/models/llama3-8b-shape): another model folder (config.json only: the
#      default folder's tokenizer serves it),
#      SERVE_ARGS (more `vllm serve` arguments, e.g. "--tensor-parallel-size 2"),
#      PROFILE_CASES (default none): cases run first, under vLLM's torch profiler (PROFILE_DELAY steps into
#      the case, PROFILE_STEPS steps) with other prompts (--seed 7: no prefix-cache hit for the later
#      cases), their GPU activities -> prof_kernels_caseK.csv.gz (predictors/calibration/profile_kernels.py),
#      their results -> prof_caseK.json (not part of the reference: the profiler slows the host);
#      PROFILE_LAST=1 runs them after CASES instead of before.
#      SPY (default none): the path of a py-spy binary; each case's EngineCore threads are sampled at 250 Hz
#      without pausing it (--nonblocking; idle samples included) -> spy_caseK.txt (collapsed stacks), and
#      the API server's -> spy_api_caseK.txt. SPY_CASES (default all) names the runs sampled (caseK or
#      caseKr); SPY_NATIVE=1 samples the EngineCore's native frames too (--native: py-spy then pauses the
#      process at each sample, which slows it) and leaves the API server alone.
set -u
t0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
PARTS=${PARTS:-/root/parts}
BUDGET_S=${BUDGET_S:-450}
CASES=${CASES:-"1 2 3 4"}
el() { echo $(( $(date +%s) - t0 )); }
. "$(dirname "$0")/cases.sh"  # SPEC, case_name, mono_ns, model_folder
model_folder "$(dirname "$0")/../models/llama3-8b-shape"   # MODEL, TOKENIZER
note() { echo "[$(el)s] $*" | tee -a "$OUT/bench.log"; }

note "parts: $(ls -la "$PARTS" 2>&1 | tr '\n' ' ')"
mkdir -p /tmp/site && cat "$PARTS"/part.* | xz -dc | tar -C /tmp/site -xf - || { note "unpack failed"; exit 2; }
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
note "unpacked; $(nvidia-smi --query-gpu=name,memory.used,memory.total,clocks.max.sm --format=csv,noheader 2>&1)"

PROFILE_CASES=${PROFILE_CASES:-}
prof_args=()
if [ -n "$PROFILE_CASES" ]; then
  prof_args=(--profiler-config "{\"profiler\": \"torch\", \"torch_profiler_dir\": \"/tmp/prof\", \"torch_profiler_with_stack\": false, \"ignore_frontend\": true, \"delay_iterations\": ${PROFILE_DELAY:-100}, \"max_iterations\": ${PROFILE_STEPS:-30}}")
fi
# SERVE_ARGS: more `vllm serve` arguments (word-split), e.g. "--tensor-parallel-size 2"
python3 -m vllm.entrypoints.cli.main serve "$MODEL" --tokenizer "$TOKENIZER" --load-format dummy --port 8000 "${prof_args[@]}" ${SERVE_ARGS:-} > "$OUT/serve.log" 2>&1 &
srv=$!
note "server pid $srv started"

ready=0
while [ $(el) -lt 300 ]; do
  if ! kill -0 $srv 2>/dev/null; then note "server exited early"; break; fi
  if python3 -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=2).status==200 else 1)" 2>/dev/null; then
    ready=1; break
  fi
  sleep 2
done
t_ready=$(el)
note "ready=$ready after ${t_ready}s (since script start)"

# profile_case K: case K under vLLM's profiler (skipped when under 60 s of the budget are left)
profile_case() {
  local k=$1 left=$(( BUDGET_S - $(el) - 25 ))
  if [ $left -lt 60 ]; then note "prof_case$k skipped: ${left}s left"; return; fi
  rm -rf /tmp/prof
  note "prof_case$k: $(dataset_args $k) under the profiler"
  echo "prof_case$k start $(mono_ns python3)" >> "$OUT/marks.txt"
  timeout $(( left < 120 ? left : 120 )) python3 -m vllm.entrypoints.cli.main bench serve --backend vllm --port 8000 --profile --seed 7 \
    --model "$MODEL" --tokenizer "$TOKENIZER" $(dataset_args $k) --save-result --result-dir "$OUT" --result-filename prof_case$k.json \
    >> "$OUT/bench.log" 2>&1
  note "prof_case$k rc=$?"
  echo "prof_case$k end $(mono_ns python3)" >> "$OUT/marks.txt"
  for i in $(seq 60); do ls /tmp/prof/*.pt.trace.json* >/dev/null 2>&1 && break; sleep 1; done
  sleep 3  # the trace file is written in one go; let it finish
  python3 "$(dirname "$0")/../../predictors/calibration/profile_kernels.py" /tmp/prof "$OUT/prof_kernels_case$k.csv.gz" 2>&1 | tee -a "$OUT/bench.log"
  ls -la /tmp/prof >> "$OUT/bench.log" 2>&1
}

if [ $ready = 1 ]; then
  # PROFILE_LAST=1: the profiled cases after the others (a profiler session leaves later CUDA-graph
  # replays slower, ../../predictors/data/h200/graph_nocupti_2026-12-04, so the reference cases go first)
  [ "${PROFILE_LAST:-0}" = 1 ] || for k in $PROFILE_CASES; do profile_case $k; done
  for k in $CASES; do
    left=$(( BUDGET_S - $(el) - 25 ))
    if [ $left -lt 20 ]; then note "case$k skipped: ${left}s left"; continue; fi
    name=$(case_name $k "$OUT")
    note "$name: $(dataset_args $k) (limit ${left}s)"
    echo "$name start $(mono_ns python3)" >> "$OUT/marks.txt"
    spy=
    if [ -n "${SPY:-}" ] && { [ -z "${SPY_CASES:-}" ] || [[ " $SPY_CASES " == *" $name "* ]]; }; then
      how=--nonblocking; [ "${SPY_NATIVE:-0}" = 1 ] && how=--native
      "$SPY" record --pid "$(pgrep -f VLLM::EngineCore | head -1)" $how --idle --threads --rate 250 \
        --format raw -o "$OUT/spy_$name.txt" --duration 600 > "$OUT/spy_$name.log" 2>&1 &
      spy=$!
      # and the API server's threads (its event loop, the tokenizer pool): the HTTP path of "client less server"
      if [ $how = --nonblocking ]; then
        "$SPY" record --pid $srv --nonblocking --idle --threads --rate 250 \
          --format raw -o "$OUT/spy_api_$name.txt" --duration 600 > "$OUT/spy_api_$name.log" 2>&1 &
        spy="$spy $!"
      fi
    fi
    proc_cpu python3 "$name start" $srv >> "$OUT/proc_cpu.txt"
    TIMEFORMAT="$name client user=%U sys=%S wall=%R"
    { time timeout $left python3 -m vllm.entrypoints.cli.main bench serve --backend vllm --port 8000 \
      --model "$MODEL" --tokenizer "$TOKENIZER" $(dataset_args $k) \
      --save-result --save-detailed --result-dir "$OUT" --result-filename $name.json \
      2>&1 | main_marks python3 $name $$ "$OUT" >> "$OUT/bench.log" ; rc=${PIPESTATUS[0]} ; } 2>> "$OUT/proc_cpu.txt"
    proc_cpu python3 "$name end" $srv >> "$OUT/proc_cpu.txt"
    note "$name rc=$rc"
    echo "$name end $(mono_ns python3)" >> "$OUT/marks.txt"
    [ -z "$spy" ] || { kill -INT $spy; wait $spy; }
    python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:8000/metrics', timeout=10).read().decode())" > "$OUT/metrics_$name.txt" 2>&1
  done
  [ "${PROFILE_LAST:-0}" = 1 ] && for k in $PROFILE_CASES; do profile_case $k; done
fi

{
  echo "engine ready after ${t_ready}s of script time (unpack included); ready=$ready"
  echo "--- startup facts (grep of serve.log) ---"
  grep -aiE "GPU KV cache size|Maximum concurrency|backend|compilation_config|compil|cudagraph|CUDA graph|Graph capturing|model runner|Model loading took|Available KV cache|memory profiling|torch.compile|init engine|Non-default args|vLLM API server version|dtype|max_num_batched|max_model_len|chunked|prefix" "$OUT/serve.log" | cut -c1-4000 | head -120
} > "$OUT/startup.txt"

kill -INT $srv 2>/dev/null
for i in $(seq 10); do kill -0 $srv 2>/dev/null || break; sleep 1; done
kill -KILL $srv 2>/dev/null
# keep serve.log under the size that comes back
if [ $(stat -c %s "$OUT/serve.log") -gt 8000000 ]; then
  tail -c 8000000 "$OUT/serve.log" > "$OUT/serve.tail" && mv "$OUT/serve.tail" "$OUT/serve.log"
fi
note "done"
