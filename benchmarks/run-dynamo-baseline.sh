#!/usr/bin/env bash
# Dynamo request-plane baselines (issue 33): Python client <-> Python worker on the real ai-dynamo-runtime 1.6.1,
# file discovery, loopback (benchmarks/dynamo_baseline.py says what each figure is):
#   - an empty request's round trip, p50/p90 over 500 calls;
#   - a call to the encode-shaped worker plus the dynamo.nixl_connect read of its 16 MiB tensor, p50/p90;
#   - requests per second of a hash worker (fixed CPU work per request).
#
#   benchmarks/run-dynamo-baseline.sh [roundtrip] [encode] [hash] [dynamo_baseline.py options]
#
# The same figures against the Java side (the targets of docs/benchmarks.md, "Issue 33"):
#   Java worker:  start it serving bench.echo.generate / bench.encoder.generate / bench.hash.generate in a file store
#                 DIR, then  benchmarks/run-dynamo-baseline.sh --external-worker --file-kv DIR
#   Java client:  benchmarks/run-dynamo-baseline.sh --client-cmd 'java ... {endpoint} {file_kv} {requests} ...'
#                 (placeholders and the SUMMARY line it must print: benchmarks/dynamo_baseline.py)
# Environment equivalents: DYNAMO_BASELINE_EXTERNAL_WORKER=1, DYNAMO_BASELINE_FILE_KV, DYNAMO_BASELINE_CLIENT_CMD.
# Sets NIXL and the Dynamo runtime up with .ci/nixl-setup.sh and .ci/dynamo-setup.sh unless already in the
# environment (NIXL_PYTHON_PATH, DYNAMO_RUNTIME_PATH).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
if [[ -z "${NIXL_PYTHON_PATH:-}" ]]; then eval "$(.ci/nixl-setup.sh)"; fi
if [[ -z "${DYNAMO_RUNTIME_PATH:-}" ]]; then eval "$(.ci/dynamo-setup.sh)"; fi
if [[ -z "${DYNAMO_RUNTIME_PATH:-}" ]]; then
  echo "run-dynamo-baseline: the Dynamo runtime could not be set up (.ci/dynamo-runtime-setup.sh)" >&2
  exit 1
fi
export PYTHONPATH="$NIXL_PYTHON_PATH:$DYNAMO_RUNTIME_PATH"
echo "== $(date -u +%FT%TZ) $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB, ai-dynamo-runtime ${DYNAMO_RUNTIME_VERSION:-1.6.1}, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
"$DYNAMO_RUNTIME_PYTHON" benchmarks/dynamo_baseline.py "$@"
echo "== load average: $(cut -d' ' -f1-3 /proc/loadavg)"
