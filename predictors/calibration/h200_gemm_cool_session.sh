#!/bin/bash
# Full-clock GEMM rows and the power cap's recovery, with the card's clock sampled every 20 ms alongside:
#   microbench_h200.py's GEMM sections with --cool-ms 150 (every timed repetition at full clock) -> $OUT/mb/
#   power_dynamics.py third (idle gaps of 30-75 ms, copies or adds instead of idle, row-like bursts) -> $OUT/power_third.json
# MB_SECTIONS and POWER_SET choose other sections and sets (sdpa and ramp: $OUT/mb/sdpa.parquet, $OUT/power_ramp.json).
# plus $OUT/smi.csv.gz (nvidia-smi: SM clock, power, temperature, throttle reasons) and $OUT/session.log.
# Nothing here changes GPU clocks or settings.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
exec > >(tee "$OUT/session.log") 2>&1
nvidia-smi --query-gpu=timestamp,clocks.current.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv -lms 20 > "$OUT/smi.csv" &
SMI=$!
date +%T.%N
SET=${POWER_SET:-third}
timeout 150 python3 predictors/calibration/power_dynamics.py "$OUT/power_$SET.json" "$SET"
echo "power rc=$?"; date +%T.%N
timeout 400 python3 predictors/calibration/microbench_h200.py "$OUT/mb" --sections "${MB_SECTIONS:-gemm_main,gemm_extra}" \
  --cool-ms 150 --names subset --budget 380
echo "microbench rc=$?"; date +%T.%N
kill $SMI
gzip -f "$OUT/smi.csv"
rm -f "$OUT/mb/python_host_bench.json"
ls -la "$OUT" "$OUT/mb"
