#!/bin/bash
# The H200's power-cap dynamics (predictors/calibration/power_dynamics.py), with the card's clock and power
# sampled every 20 ms alongside. Writes $OUT/power_dynamics.json, $OUT/smi_fast.csv, $OUT/session.log.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
exec > >(tee "$OUT/session.log") 2>&1
nvidia-smi --query-gpu=timestamp,clocks.current.sm,power.draw,temperature.gpu --format=csv -lms 20 > "$OUT/smi_fast.csv" &
SMI=$!
date +%T
timeout 300 python3 predictors/calibration/power_dynamics.py "$OUT/power_dynamics.json"
echo "rc=$?"
kill $SMI
gzip -f "$OUT/smi_fast.csv"
date +%T
