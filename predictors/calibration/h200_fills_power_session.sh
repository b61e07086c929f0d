#!/bin/bash
# One lease: the recorder over the fills and device-to-device copy workloads (record_workloads.py sections
# fills,d2d), then the second set of power-cap experiments (power_dynamics.py ... second) with the card's
# clock and power sampled every 20 ms. Writes $OUT/rec/{kernels.parquet,summary.json}, $OUT/power2.json,
# $OUT/smi2.csv.gz, $OUT/session.log.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
exec > >(tee "$OUT/session.log") 2>&1
date +%T
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv,noheader
timeout 240 python3 -m integrations.record --out "$OUT/rec" -- predictors/calibration/record_workloads.py \
    --budget 180 --sections fills,d2d
echo "record rc=$?"
rm -f "$OUT/rec/runtime.parquet" "$OUT/rec/trace.json.gz"
nvidia-smi --query-gpu=timestamp,clocks.current.sm,power.draw,temperature.gpu --format=csv -lms 20 > "$OUT/smi2.csv" &
SMI=$!
timeout 200 python3 predictors/calibration/power_dynamics.py "$OUT/power2.json" second
echo "power rc=$?"
kill $SMI
gzip -f "$OUT/smi2.csv"
ls -la "$OUT" "$OUT/rec"
date +%T
