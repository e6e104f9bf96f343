#!/usr/bin/env bash
# Upstream-only reproduction of the abort the NIXL soak's Python pass meets over UCX_TLS=tcp,self (docs/reliability.md,
# "UCX aborts a process that serves READs over TCP"): interop/ucx_tcp_get_abort.py, dynamo.nixl_connect 1.6.1 serving
# READs to readers that die mid-read, no Java. Exit 0 when the serving process survived every round, 1 when UCX
# aborted it. Run it again after a NIXL/UCX upgrade: a release that survives lets CI's Python soak pass run over
# tcp,self again (scripts/test.sh).
#
#   benchmarks/run-ucx-tcp-get-abort.sh [ROUNDS [read|write]]   # default 200 rounds of read (about 2 s each)
#
# "write" turns the direction round: the process writes into targets that die mid-write (docs/nixl.md weighs it).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
if [[ -z "${NIXL_PYTHON_PATH:-}" ]]; then eval "$(.ci/nixl-setup.sh)"; fi
if [[ -z "${DYNAMO_PYTHON_PATH:-}" ]]; then eval "$(.ci/dynamo-setup.sh)"; fi
export PYTHONPATH="$NIXL_PYTHON_PATH:$DYNAMO_PYTHON_PATH" UCX_TLS=tcp,self
# UCX's messages to stderr (its default is stdout), with a backtrace on its fatal errors.
export UCX_LOG_FILE="${UCX_LOG_FILE:-stderr}" UCX_HANDLE_ERRORS="${UCX_HANDLE_ERRORS:-bt}"
out="$(mktemp /tmp/ucx-tcp-get-abort.XXXXXX)"
set +e
"${NIXL_PYTHON:-python3}" -u interop/ucx_tcp_get_abort.py "${1:-200}" "${2:-read}" >"$out" 2>&1
status=$?
set -e
# UCX's fatal message and backtrace, if any (its "connect ... refused" errors are readers already killed).
grep -A16 -E "Fatal|Assertion" "$out" | cut -c1-240 || true
if grep -q "^survived" "$out"; then
  echo "ucx-tcp-get-abort: the serving process survived (output: $out)"
  exit 0
fi
echo "ucx-tcp-get-abort: the serving process died with exit status $status after $(grep -c '^round ' "$out") rounds" \
  "(134: SIGABRT, UCX's abort; output: $out)"
exit 1
