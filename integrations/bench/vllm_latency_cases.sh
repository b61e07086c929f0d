#!/bin/bash
# Offline `vllm bench latency` cases (one batch through LLM.generate, timed end to end, vLLM's defaults for
# the offline engine), run the same way on the real GPU (predictors/calibration/h200_vllm_session.sh
# STAGE=latency) and under timewarp:
#     timewarp run [--gpu G] -- bash integrations/bench/vllm_latency_cases.sh OUT_DIR ["B:I:O ..."]
# B prompts of I random tokens, O outputs each (--ignore-eos is the benchmark's own), 2 warm-up iterations and
# 5 timed ones per case, each case a new engine. Writes OUT_DIR/latency_B_I_O.json (avg_latency, latencies)
# and .log; compare with python -m timewarp.integrations.latency_compare EMULATED_DIR REAL_DIR.
set -u
OUT=$(mkdir -p "${1:?usage: vllm_latency_cases.sh OUT_DIR [\"B:I:O ...\"]}" && cd "$1" && pwd)
SPECS=${2:-"64:128:256 16:1024:128 1:512:128"}
PY=${PYTHON:-python3}
# PYTHONSAFEPATH: from a checkout, `python -m` would import the source folder instead of the installed package
export HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 PYTHONSAFEPATH=1
. "$(dirname "$0")/cases.sh"  # model_folder
model_folder "$(dirname "$0")/../models/llama3-8b-shape"   # MODEL, TOKENIZER
for spec in $SPECS; do
  IFS=: read -r B I O <<< "$spec"
  name=latency_${B}_${I}_${O}
  $PY -m vllm.entrypoints.cli.main bench latency --model "$MODEL" --tokenizer "$TOKENIZER" --load-format dummy \
    --batch-size "$B" --input-len "$I" --output-len "$O" --num-iters-warmup 2 --num-iters 5 \
    --output-json "$OUT/$name.json" > "$OUT/$name.log" 2>&1
  echo "$name rc=$? $(grep -a -m1 'Avg latency' "$OUT/$name.log")"
done
