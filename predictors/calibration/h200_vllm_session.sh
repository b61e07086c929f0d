#!/bin/bash
# One stage of a calibration lease on the H200 with vLLM 0.24.0 (issue 5), run from the repository root
# after the parts written by ../shared/device/pack_site.sh .devpack 'vllm==0.24.0' were copied to
# /root/parts (one `run` per part). Unpacks once (kept in /tmp/site while the machine stays warm).
#   STAGE=attn    predictors/calibration/vllm_attention_bench.py -> $OUT/{attention,cache_write}.csv, ...
#   STAGE=record  integrations/record.py over predictors/calibration/vllm_workload.py -> $OUT/*.parquet
#   STAGE=eagerprof  predictors/calibration/vllm_eager_profile.py (one prefill step, function by function)
#   STAGE=latency integrations/bench/vllm_latency_cases.sh (offline `vllm bench latency`, LATENCY_SPECS "B:I:O ...")
#                 -> $OUT/latency_*.json, .log
#   STAGE=syscalls  predictors/calibration/syscall_probe.py three times -> $OUT/syscall_probe_{1,2,3}.json (CPU only,
#                 about 20 s: the kernel's CPU per system call beside the pace probe's time)
#   STAGE=client  predictors/calibration/bench_client_intake.py twice -> $OUT/client_intake.jsonl (CPU only;
#                 about 2 minutes a run on the H200 host: three `vllm bench serve` commands, 35 s of CPU each)
#   STAGE=serve   predictors/host_speed.py, coordinator/pace.py's probe (before, during, after), then
#                 integrations/bench/real_vllm_baseline.sh (CASES from the
#                 environment; TIMELINE=1 adds integrations/vllm_plugin/timeline.py's per-process timelines,
#                 NVML=1 predictors/calibration/nvml_sampler.py's clock and power every 10 ms; FWD_PARTS=1 the
#                 parts of each non-graph forward in the timeline; SPY, SPY_CASES, SPY_NATIVE: py-spy; INDUCTOR_HOST=1
#                 predictors/programs/inductor_host.py twice before serving);
#                 everything in one $OUT/serve_bundle.tar.gz
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
if [ ! -f /tmp/site/.unpacked ]; then
  mkdir -p /tmp/site && cat /root/parts/part.* | xz -dc | tar -C /tmp/site -xf - && touch /tmp/site/.unpacked \
    || { echo "unpack failed"; exit 2; }
fi
export PYTHONPATH=/tmp/site HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.used,clocks.max.sm --format=csv,noheader
if [ -n "${TIMELINE:-}" ]; then  # vLLM's plugin entry point loads timeline.py as a top-level module
  mkdir -p /tmp/tl/tw_timeline-0.dist-info
  printf 'Metadata-Version: 2.1\nName: tw-timeline\nVersion: 0\n' > /tmp/tl/tw_timeline-0.dist-info/METADATA
  printf '[vllm.general_plugins]\ntw_timeline = timeline:register\n' > /tmp/tl/tw_timeline-0.dist-info/entry_points.txt
  export PYTHONPATH=$PYTHONPATH:/tmp/tl:$PWD/integrations/vllm_plugin TIMEWARP_VLLM_TIMELINE=$OUT/timeline
  # FWD_PARTS=1: each non-graph forward's parts (Inductor's pieces, Triton launches, cuBLAS, attention)
  [ "${FWD_PARTS:-0}" = 1 ] && export TIMEWARP_VLLM_TIMELINE_PARTS=1
fi
case "${STAGE:?}" in
  attn)   python3 predictors/calibration/vllm_attention_bench.py --out "$OUT" --budget-s "${BUDGET_S:-200}" ;;
  eagerprof) python3 predictors/host_speed.py --out "$OUT/host_speed.json" > /dev/null
          python3 predictors/calibration/vllm_eager_profile.py --model integrations/models/llama3-8b-shape \
            --out "$OUT/eager_profile.json" ${EAGERPROF_ARGS:-} > "$OUT/eager_profile.log" 2>&1; tail -5 "$OUT/eager_profile.log"
          [ -d "$OUT/timeline" ] && (cd "$OUT" && tar czf timeline.tar.gz timeline && rm -rf timeline) ;;
  latency) python3 predictors/host_speed.py --out "$OUT/host_speed.json" > /dev/null
          bash integrations/bench/vllm_latency_cases.sh "$OUT" ${LATENCY_SPECS:+"$LATENCY_SPECS"} ;;
  syscalls) for i in 1 2 3; do python3 predictors/calibration/syscall_probe.py --out "$OUT/syscall_probe_$i.json"; done ;;
  client) for i in 1 2; do
            python3 predictors/calibration/bench_client_intake.py >> "$OUT/client_intake.jsonl" 2>> "$OUT/client_intake.log"
          done; tail -c 3000 "$OUT/client_intake.jsonl" ;;
  record) python3 integrations/record.py --out "$OUT" --window program --no-shapes -- \
            predictors/calibration/vllm_workload.py --model integrations/models/llama3-8b-shape ${WORKLOAD_ARGS:-} ;;
  serve)  python3 predictors/host_speed.py --out "$OUT/host_speed.json" > /dev/null
          python3 predictors/calibration/syscall_probe.py --out "$OUT/syscall_probe.json" > /dev/null
          # INDUCTOR_HOST=1: predictors/programs/inductor_host.py twice first, on the idle GPU
          [ "${INDUCTOR_HOST:-0}" = 1 ] && for i in 1 2; do
            python3 predictors/programs/inductor_host.py >> "$OUT/inductor_host.jsonl" 2>> "$OUT/inductor_host.log"; done
          # the host pace probe (coordinator/pace.py) before, during and after serving, on the same host
          # (PACE=0 skips it, to leave the time budget to the cases)
          [ "${PACE:-1}" = 0 ] || python3 coordinator/pace.py --measure 20 > "$OUT/pace_before.json"
          [ "${PACE:-1}" = 0 ] || python3 coordinator/pace.py --measure "${PACE_DURING_S:-240}" > "$OUT/pace_during.json" &
          # NVML=1: the SM clock, power and throttle reasons every 10 ms through the cases (nvml_sampler.py)
          [ "${NVML:-0}" = 1 ] && { python3 predictors/calibration/nvml_sampler.py "$OUT/nvml.csv" & nvml=$!; }
          PARTS=/root/parts bash integrations/bench/real_vllm_baseline.sh
          [ -n "${nvml:-}" ] && { kill -TERM $nvml; wait $nvml; }
          wait
          [ "${PACE:-1}" = 0 ] || python3 coordinator/pace.py --measure 20 > "$OUT/pace_after.json"
          # at most 8 files come back: one bundle
          (cd "$OUT" && tar czf /tmp/serve_bundle.tar.gz --exclude serve_bundle.tar.gz . && rm -rf ./* && mv /tmp/serve_bundle.tar.gz .) ;;
  *) echo "unknown STAGE=$STAGE"; exit 2 ;;
esac
