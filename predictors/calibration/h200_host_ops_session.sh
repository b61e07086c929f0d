#!/bin/bash
# Host cost of eager operations on the real H200 (issue 3, host time), run from the repository root with the
# machine's own torch and transformers (nothing carried). Writes to $OUT:
#   gpu.txt           the card, driver, max SM clock and power limit
#   host_speed.json   predictors/host_speed.py on this host
#   host_ops.jsonl    predictors/programs/host_ops.py, three runs, one JSON line each
#   hf_llama8b.jsonl  predictors/programs/hf_llama8b.py --layers 4 twice, then 32 layers twice, one JSON line each
#   session.log       this script's log (stdout and stderr of every step, with time markers)
# Each Python step has a timeout guard, and the whole script keeps to a deadline (DEADLINE_S, default 560 s) so
# that it ends inside a 10-minute run: a step is given at most the time left and skipped when too little is
# left; the second 32-layer run comes last, so it is the one dropped first. A failing step does not stop the
# others.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
exec > >(tee "$OUT/session.log") 2>&1
START=$(date +%s)
DEADLINE_S=${DEADLINE_S:-560}

# step NAME GUARD_S APPEND_TO CMD...: run CMD with a timeout of min(GUARD_S, time left); append its last stdout
# line (a JSON object) to APPEND_TO when it succeeded; its stdout and stderr go to the log.
step() {
  local name=$1 guard=$2 dest=$3; shift 3
  local left=$((START + DEADLINE_S - $(date +%s)))
  echo "== $name $(date +%T) (guard ${guard}s, ${left}s left)"
  if [ "$left" -lt 20 ]; then echo "== $name SKIPPED: too little time left"; return; fi
  [ "$guard" -gt "$left" ] && guard=$left
  local tmp; tmp=$(mktemp)
  timeout -k 10 "$guard" "$@" > "$tmp"
  local rc=$?
  cat "$tmp"
  if [ "$rc" -eq 0 ]; then
    [ -n "$dest" ] && tail -n 1 "$tmp" >> "$dest"
    echo "== $name ok $(date +%T)"
  else
    echo "== $name FAILED rc=$rc $(date +%T)"
  fi
  rm -f "$tmp"
}

echo "== start $(date +%T) $(hostname)"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > "$OUT/gpu.txt" \
  || echo "== nvidia-smi FAILED rc=$?"
cat "$OUT/gpu.txt"
python3 -c 'import sys, torch, transformers; print("python", sys.version.split()[0], "torch", torch.__version__,
  "transformers", transformers.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))' \
  || echo "== version check FAILED"
nproc; grep -m1 "model name" /proc/cpuinfo

step host_speed 90 "" python3 predictors/host_speed.py --out "$OUT/host_speed.json"
for i in 1 2 3; do
  step "host_ops run $i" 240 "$OUT/host_ops.jsonl" python3 predictors/programs/host_ops.py
done
for i in 1 2; do
  step "hf_llama8b 4 layers run $i" 120 "$OUT/hf_llama8b.jsonl" python3 predictors/programs/hf_llama8b.py --layers 4
done
for i in 1 2; do
  step "hf_llama8b 32 layers run $i" 300 "$OUT/hf_llama8b.jsonl" python3 predictors/programs/hf_llama8b.py
done
echo "== done $(date +%T) ($(( $(date +%s) - START ))s)"
