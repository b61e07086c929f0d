#!/bin/bash
# The H200's calibration measurements repeated on another card (issue 3, acceptance 3: the transfer of the H200's
# data to the H100 by the catalog's rates, checked against the real card). Run from the repository root with the
# machine's own torch and transformers (nothing carried); about 8 minutes. Writes at most 8 files to $OUT:
#   gpu.txt          the card, driver, clocks and power limit; torch's view of the device
#   mb_gemm.tar.gz   microbench_h200.py --sections gemm_main,gemm_extra --cool-ms 150 --names subset
#                    (the rows of ../data/h200/gemm_cool_2026-12-03)
#   mb_sdpa.tar.gz   microbench_h200.py --sections sdpa --cool-ms 150 --names subset (as sdpa_cool_2026-12-03)
#   mb_slope.tar.gz  microbench_h200.py --sections host,elementwise --graph-slope --slope-reuse --no-profile
#                    (as graph_nocupti_2026-12-04)
#   mb_copy.tar.gz   microbench_h200.py --sections memcpy --graph-slope --memcpy-grid dense --no-profile
#                    (one pass of memcpy_dense_2026-12-02's grid)
#   programs.tar.gz  host_speed.json, real_hf_llama8b.json, programs.jsonl, demo.txt (as h200_programs_session.sh)
#   smi.csv.gz       nvidia-smi every 100 ms: SM clock, power, temperature, clock-event reasons
#   session.log      this script's output
# Nothing here changes GPU clocks or settings.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
exec > >(tee "$OUT/session.log") 2>&1
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit,memory.total --format=csv
  python3 -c 'import torch; p = torch.cuda.get_device_properties(0); print(torch.__version__, p.name, p.multi_processor_count, p.total_memory, getattr(p, "L2_cache_size", "?"))'
} > "$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"
nvidia-smi --query-gpu=timestamp,clocks.current.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv -lms 100 > "$OUT/smi.csv" &
SMI=$!
mb() {  # mb NAME TIMEOUT ARGS...: one microbench run into /tmp/NAME, packed as $OUT/NAME.tar.gz
  local name=$1 limit=$2; shift 2
  echo "== $name $(date +%T)"
  timeout "$limit" python3 predictors/calibration/microbench_h200.py "/tmp/$name" "$@"
  echo "$name rc=$? $(date +%T)"
  rm -f "/tmp/$name/python_host_bench.json"
  tar czf "$OUT/$name.tar.gz" -C /tmp "$name"
}
mb mb_gemm 200 --sections gemm_main,gemm_extra --cool-ms 150 --names subset --budget 180
mb mb_sdpa 130 --sections sdpa --cool-ms 150 --names subset --budget 110
mb mb_slope 110 --sections host,elementwise --graph-slope --slope-reuse --no-profile --budget 100
mb mb_copy 100 --sections memcpy --graph-slope --memcpy-grid dense --no-profile --budget 90
echo "== programs $(date +%T)"
mkdir -p /tmp/programs
python3 predictors/host_speed.py --out /tmp/programs/host_speed.json > /dev/null
timeout 150 python3 predictors/programs/hf_llama8b.py > /tmp/programs/real_hf_llama8b.json; cat /tmp/programs/real_hf_llama8b.json
( cd predictors/programs && for p in "device_basics.py" "virtual_time.py 1.0" "compile_and_llama.py --generate"; do
    echo "{\"program\": \"$p\", \"result\": $(timeout 100 python3 $p | tail -1)}"; done ) > /tmp/programs/programs.jsonl
cat /tmp/programs/programs.jsonl
timeout 60 python3 integrations/demo.py > /tmp/programs/demo.txt 2>&1; tail -5 /tmp/programs/demo.txt
tar czf "$OUT/programs.tar.gz" -C /tmp programs
kill $SMI
gzip -f "$OUT/smi.csv"
echo "== done $(date +%T)"
ls -la "$OUT"
