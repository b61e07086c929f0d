#!/usr/bin/env bash
# Regenerates the Python modules of coordinator/proto/timewarp_coordinator.proto (committed, so that
# installing timewarp needs no protoc). Needs grpcio-tools: pip install grpcio-tools
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="${PYTHON:-python3}"
"$python" -m grpc_tools.protoc -I "$here/proto" --python_out="$here" --grpc_python_out="$here" \
    "$here/proto/timewarp_coordinator.proto"
# the generated service module imports its message module as a top-level one: make it package-relative
sed -i 's/^import timewarp_coordinator_pb2 as /from . import timewarp_coordinator_pb2 as /' \
    "$here/timewarp_coordinator_pb2_grpc.py"
