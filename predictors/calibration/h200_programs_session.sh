#!/bin/bash
# Whole programs on the real H200 (issue 3, acceptance 2), run from the repository root with the machine's own
# torch and transformers (nothing carried). Writes at most 8 files to $OUT:
#   gpu.txt               the card, driver, clocks and power limit
#   smi.csv               SM clock, power and temperature every 200 ms through the session (power capping)
#   host_speed.json       predictors/host_speed.py on this host
#   real_hf_llama8b.json  predictors/programs/hf_llama8b.py: Llama-3-8B-shaped transformers model, prefill and generate()
#   programs.jsonl        predictors/programs/{device_basics,virtual_time,compile_and_llama}.py, one JSON line each
#   demo.txt              integrations/demo.py
#   rec_hf_llama4.tar.gz  integrations/record.py over hf_llama8b.py --layers 4 --quick: every kernel's duration
#   session.log           this script's log
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
exec > >(tee "$OUT/session.log") 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit,power.max_limit --format=csv \
  > "$OUT/gpu.txt"
cat "$OUT/gpu.txt"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu --format=csv \
  -lms 200 > "$OUT/smi.csv" &
SMI=$!
python3 -c 'import torch, transformers; print(torch.__version__, transformers.__version__)'
python3 predictors/host_speed.py --out "$OUT/host_speed.json" > /dev/null
echo "== hf_llama8b $(date +%T)"
python3 predictors/programs/hf_llama8b.py > "$OUT/real_hf_llama8b.json"; cat "$OUT/real_hf_llama8b.json"
echo "== programs $(date +%T)"
( cd predictors/programs && for p in "device_basics.py" "virtual_time.py 1.0" "compile_and_llama.py --generate"; do
    echo "{\"program\": \"$p\", \"result\": $(python3 $p | tail -1)}"; done ) > "$OUT/programs.jsonl"
cat "$OUT/programs.jsonl"
echo "== demo $(date +%T)"
python3 integrations/demo.py > "$OUT/demo.txt" 2>&1; tail -5 "$OUT/demo.txt"
echo "== record $(date +%T)"
python3 integrations/record.py --out /tmp/rec --window program -- predictors/programs/hf_llama8b.py --layers 4 --quick \
  > /tmp/rec.log 2>&1; tail -3 /tmp/rec.log
cp /tmp/rec.log /tmp/rec/ 2>/dev/null; tar czf "$OUT/rec_hf_llama4.tar.gz" -C /tmp rec
kill $SMI
echo "== done $(date +%T)"
