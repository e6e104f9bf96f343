#!/usr/bin/env bash
# Dynamo request-plane benchmarks (issue 33), Java against Python in one run, on the real ai-dynamo-runtime 1.6.1,
# file discovery, loopback (benchmarks/dynamo_baseline.py defines each figure; DynamoBenchmark is the Java side):
#   1. Python client -> Python worker: roundtrip, encode, hash (the baselines);
#   2. Java client   -> Python worker: roundtrip (target: p50 <= 1.'s) and encode (16 MiB call + nixl_connect
#      read, target: read p50 <= 1.'s), the Java client run through dynamo_baseline.py --client-cmd;
#   3. Python client -> Java worker: hash (target: requests/s >= 1.'s), roundtrip and encode for reference,
#      through dynamo_baseline.py --external-worker against DynamoBenchmark worker.
# BENCH_ROUNDS (default 1) repeats the three in turn; the comparison at the end takes the median over rounds.
#
#   benchmarks/run-dynamo.sh [dynamo_baseline.py options, e.g. --calls 200 --encode-calls 10]
#
# Sets NIXL and the Dynamo runtime up with .ci/nixl-setup.sh and .ci/dynamo-setup.sh unless already in the
# environment (NIXL_LIBRARY_DIR, NIXL_PYTHON_PATH, DYNAMO_RUNTIME_PATH).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
if [[ -z "${NIXL_LIBRARY_DIR:-}" || -z "${NIXL_PYTHON_PATH:-}" ]]; then eval "$(.ci/nixl-setup.sh)"; fi
if [[ -z "${DYNAMO_RUNTIME_PATH:-}" ]]; then eval "$(.ci/dynamo-setup.sh)"; fi
if [[ -z "${DYNAMO_RUNTIME_PATH:-}" ]]; then
  echo "run-dynamo: the Dynamo runtime could not be set up (.ci/dynamo-runtime-setup.sh)" >&2
  exit 1
fi
if [[ "${BENCH_SKIP_BUILD:-0}" != 1 ]]; then
  ./mvnw -q -B -o -pl nixl-connect-benchmarks -am package -DskipTests >&2 \
    || ./mvnw -q -B -pl nixl-connect-benchmarks -am package -DskipTests >&2
fi
classpath="nixl-connect-benchmarks/target/classes:$(ls nixl-connect-benchmarks/target/lib/*.jar | tr '\n' ':')"
java_cmd="java --enable-native-access=ALL-UNNAMED -Xmx1g -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp $classpath io.nixlconnect.benchmarks.DynamoBenchmark"
export PYTHONPATH="$NIXL_PYTHON_PATH:$DYNAMO_RUNTIME_PATH"
python="$DYNAMO_RUNTIME_PYTHON"
client_cmd="$java_cmd client --endpoint {endpoint} --file-kv {file_kv} --requests {requests} --warmup {warmup} --concurrency {concurrency} --read {read} --request '{request}'"

rounds="${BENCH_ROUNDS:-1}"
work="$(mktemp -d)"
worker_pid=""
cleanup() {
  if [[ -n "$worker_pid" ]] && kill -0 "$worker_pid" 2>/dev/null; then kill -TERM "$worker_pid"; wait "$worker_pid" || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

for round in $(seq "$rounds"); do
  echo "== round $round of $rounds: $(date -u +%FT%TZ) $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB, $(java -version 2>&1 | head -1), ai-dynamo-runtime ${DYNAMO_RUNTIME_VERSION:-1.6.1}, load average: $(loadavg)"
  echo "== python->python"
  "$python" benchmarks/dynamo_baseline.py roundtrip encode hash "$@"
  echo "== load average: $(loadavg)"

  echo "== java->python"
  "$python" benchmarks/dynamo_baseline.py roundtrip encode --client-cmd "$client_cmd" "$@"
  echo "== load average: $(loadavg)"

  echo "== python->java"
  kv="$work/kv-$round"
  mkdir -p "$kv"
  $java_cmd worker --file-kv "$kv" --prefix bench > "$work/worker.out" 2> "$work/worker.err" &
  worker_pid=$!
  for _ in $(seq 1 600); do
    grep -q '^READY' "$work/worker.out" && break
    kill -0 "$worker_pid" 2>/dev/null || { cat "$work/worker.out" "$work/worker.err" >&2; exit 1; }
    sleep 0.2
  done
  grep '^READY' "$work/worker.out"
  "$python" benchmarks/dynamo_baseline.py hash roundtrip encode --external-worker --file-kv "$kv" "$@"
  kill -TERM "$worker_pid"; wait "$worker_pid" || true; worker_pid=""
  echo "== load average: $(loadavg)"
done | tee "$work/log"

python3 - "$work/log" <<'PY'
import re, statistics, sys
section, figures = None, {}
for line in open(sys.argv[1]):
    if line.startswith("== ") and "->" in line:
        section = line[3:].strip()
    elif line.startswith("RESULT ") and section:
        fields = dict(word.split("=", 1) for word in line.split()[1:] if "=" in word)
        name = fields.pop("name")
        for key, value in fields.items():
            try:
                figures.setdefault((section, name, key), []).append(float(value))
            except ValueError:
                pass
def median(section, name, key):
    values = figures.get((section, name, key))
    return statistics.median(values) if values else float("nan")
rows = [
    ("round trip p50 ms (lower is better)", "roundtrip", "p50_ms", "java->python", False),
    ("encode 16 MiB call + read p50 ms (lower is better)", "encode", "read_p50_ms", "java->python", False),
    ("hash worker requests/s (higher is better)", "hash", "rps", "python->java", True),
]
print("\n== comparison (median over rounds)")
for title, name, key, java_section, higher in rows:
    python_value = median("python->python", name, key)
    java_value = median(java_section, name, key)
    met = java_value >= python_value if higher else java_value <= python_value
    print("%-52s python %10.3f   java %10.3f   target %s" % (title, python_value, java_value, "met" if met else "MISSED"))
for name, key in (("roundtrip", "p90_ms"), ("encode", "read_p90_ms"), ("roundtrip", "p50_ms"), ("encode", "read_p50_ms")):
    print("  python->java %s %s: %.3f" % (name, key, median("python->java", name, key)))
PY
