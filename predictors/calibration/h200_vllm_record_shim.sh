#!/bin/bash
# vLLM 0.24.0 on the H200 under the recorder library (timewarp record --shim's libtimewarp_record.so,
# carried in build/devlib): `vllm serve` of the Llama-3-8B-shaped folder (--load-format dummy, defaults)
# with the library preloaded in every process, then `vllm bench serve` cases 1 and 2 of
# integrations/bench/cases.sh with fewer prompts (8 and 16: the rows of every kernel must fit the 16 MiB per
# file that comes back). Run from the repository root after the vLLM parts were copied to /root/parts.
# Writes to $OUT: rec.tsv.<pid>.gz of the processes that used the GPU (split in 15 MiB pieces .gz.aa, ...),
# serve.log, bench.log, case1.json, case2.json.
# CASES (default "1 2") and PROMPTS (default 8 for case 1, 16 otherwise) choose the benchmark; with WAITS=1
# the raw rows stay there and predictors/calibration/host_waits.py summarises, per process, where the host
# waited for the GPU (waits.<pid>.json) instead.
set -u
t0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/raw"
el() { echo $(( $(date +%s) - t0 )); }
note() { echo "[$(el)s] $*" | tee -a "$OUT/bench.log"; }
MODEL=$(cd integrations/models/llama3-8b-shape && pwd)
. integrations/bench/cases.sh
mkdir -p /tmp/site && cat /root/parts/part.* | xz -dc | tar -C /tmp/site -xf - || { note "unpack failed"; exit 2; }
export PYTHONPATH=/tmp/site HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
CUPTI=$(python3 -c "import glob,site; print((glob.glob(site.getsitepackages()[0] + '/nvidia/*/lib/libcupti.so*') + [''])[0])")
note "unpacked; cupti $CUPTI"
LD_PRELOAD=$PWD/build/devlib/libtimewarp_record.so TIMEWARP_RECORD_OUT=$OUT/raw/rec.tsv TIMEWARP_CUPTI=$CUPTI \
  python3 -m vllm.entrypoints.cli.main serve "$MODEL" --load-format dummy --port 8000 > "$OUT/serve.log" 2>&1 &
srv=$!
ready=0
while [ $(el) -lt 330 ]; do
  kill -0 $srv 2>/dev/null || { note "server exited early"; break; }
  if python3 -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=2).status==200 else 1)" 2>/dev/null; then
    ready=1; break
  fi
  sleep 2
done
note "ready=$ready"
if [ $ready = 1 ]; then
  for k in ${CASES:-1 2}; do
    N=${PROMPTS:-$(( k == 1 ? 8 : 16 ))}
    # the case's own arguments (cases.sh), then fewer prompts: the last --num-prompts is the one taken
    timeout 120 python3 -m vllm.entrypoints.cli.main bench serve --backend vllm --port 8000 --model "$MODEL" \
      $(dataset_args $k) --num-prompts $N --save-result --result-dir "$OUT" --result-filename case$k.json \
      >> "$OUT/bench.log" 2>&1
    note "case$k rc=$?"
  done
fi
kill -INT $srv; sleep 8; kill -9 $srv 2>/dev/null; pkill -9 -f "vllm.entrypoints" 2>/dev/null; sleep 1
ls -la "$OUT/raw" | grep -v " 4 Nov" | tee -a "$OUT/bench.log"
grep -h "^E" "$OUT"/raw/rec.tsv.* | head -5 | tee -a "$OUT/bench.log"
for f in "$OUT"/raw/rec.tsv.*; do
  [ $(stat -c %s "$f") -gt 100 ] || continue
  if [ "${WAITS:-0}" = 1 ]; then
    [ $(stat -c %s "$f") -gt 1000000 ] || continue
    python3 predictors/calibration/host_waits.py "$f" --out "$OUT/waits.${f##*.}.json" 2>&1 | tee -a "$OUT/bench.log"
    continue
  fi
  gzip -c "$f" > "$OUT/$(basename $f).gz"
  if [ $(stat -c %s "$OUT/$(basename $f).gz") -gt 15000000 ]; then
    split -b 15M "$OUT/$(basename $f).gz" "$OUT/$(basename $f).gz." && rm "$OUT/$(basename $f).gz"
  fi
done
rm -rf "$OUT/raw"
ls -la "$OUT" | tee -a "$OUT/bench.log"
note "done"
