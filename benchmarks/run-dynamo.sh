#!/usr/bin/env bash
# Dynamo request-plane benchmarks (issue 33), Java against Python in one run, on the real ai-dynamo-runtime 1.6.1,
# file discovery, loopback (benchmarks/dynamo_compare.py says what each figure is; the Java side is
# io.nixlconnect.benchmarks.DynamoBenchmark):
#   roundtrip  Java client -> Python echo worker vs Python client -> the same worker: p50 (target Java <= Python)
#   encode     a 16 MiB encode call plus the nixl_connect read of its tensor, Java caller vs Python caller, the same
#              Python encode worker: p50 to the read's end (target Java <= Python)
#   hash       a Java worker vs a Python worker doing the same work per request (2,000 chained SHA-256), the same
#              Python client: requests/s (target Java >= Python)
# The two sides take turns in short batches (--batches, default 5 each), so that load swings hit both alike.
#
#   benchmarks/run-dynamo.sh [roundtrip] [encode] [hash] [dynamo_compare.py options]
#
# BENCH_SKIP_BUILD=1 uses the classes already built. Sets NIXL and the Dynamo runtime up with .ci/nixl-setup.sh and
# .ci/dynamo-setup.sh unless already in the environment (NIXL_LIBRARY_DIR, NIXL_PYTHON_PATH, DYNAMO_RUNTIME_PATH).
# The Python <-> Python baselines alone: benchmarks/run-dynamo-baseline.sh.
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
echo "== $(date -u +%FT%TZ) $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB, $(java -version 2>&1 | head -1), ai-dynamo-runtime ${DYNAMO_RUNTIME_VERSION:-1.6.1}, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
"$DYNAMO_RUNTIME_PYTHON" benchmarks/dynamo_compare.py --java "$java_cmd" "$@"
echo "== load average: $(cut -d' ' -f1-3 /proc/loadavg)"
