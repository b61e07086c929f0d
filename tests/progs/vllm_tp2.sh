#!/bin/bash
# vLLM 0.24.0 at --tensor-parallel-size 2 on the embedded model (run under `timewarp run --gpus 2`): three
# 32-token completions of a 100-token prompt, one after the other; prints each one's virtual seconds.
export HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 PYTHONSAFEPATH=1
M=${1:?model folder}; LOG=${2:?log file}; PORT=${PORT:-8043}; PY=${PY:-python3}
"$PY" -m vllm.entrypoints.cli.main serve "$M" --load-format dummy --port $PORT --tensor-parallel-size 2 > "$LOG" 2>&1 &
srv=$!
until "$PY" -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:$PORT/health', timeout=2).status==200 else 1)" 2>/dev/null; do
  kill -0 $srv 2>/dev/null || { echo "server died"; tail -20 "$LOG"; exit 3; }
  sleep 2
done
for k in 1 2 3; do
  "$PY" -c "
import json, time, urllib.request
t = time.perf_counter()
req = urllib.request.Request('http://127.0.0.1:$PORT/v1/completions', headers={'Content-Type': 'application/json'},
    data=json.dumps({'model': '$M', 'prompt': 'hello ' * 100, 'max_tokens': 32, 'ignore_eos': True}).encode())
r = json.loads(urllib.request.urlopen(req, timeout=300).read())
print('completion', r['usage']['completion_tokens'], 'tokens in', time.perf_counter() - t, 's')
"
done
kill -INT $srv; wait $srv
