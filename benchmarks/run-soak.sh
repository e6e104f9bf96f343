#!/usr/bin/env bash
# Soak of the NIXL backend as a service runs it (issue 22; io.nixlconnect.benchmarks.NixlSoak): a producer JVM
# publishes KV-cache shaped readables and writables per request (256 blocks x 16 KiB over a registered pool) and
# closes each once done; a consumer reads and writes them, and at random requests are aborted before they are read,
# spent metadata is read again, readers in their own process are SIGKILLed mid-read or SIGSTOPped past the drain
# limit and then killed, and the producer is restarted. Prints per interval: operations, failures by cause,
# p50/p99, heap, RSS, kept bytes, loaded peers, registrations, file descriptors; exits 1 when a target is missed
# (the targets: io.nixlconnect.benchmarks.SoakFigures, docs/reliability.md).
#
# NIXL_SOAK_INJECT_LEAK=registration|fd|memory|heap (or several, comma-separated; test-only): the Java consumer leaks one
# registration, file descriptor, 64 KiB of native memory or 16 KiB of heap per operation, and the pass must fail naming it.
#
#   benchmarks/run-soak.sh [SECONDS [INTERVAL_SECONDS]]    # default 1800 s a pass, reports every 60 s
#
# Passes: for each of SOAK_TRANSPORTS (default "tcp,self default": UCX_TLS=tcp,self, then UCX's default transports)
# each of SOAK_CONSUMERS (default "java python"): "java", a consumer JVM; "python", the real dynamo.nixl_connect 1.6.1
# (interop/dynamo_soak_consumer.py; .ci/dynamo-setup.sh fetches it) with Python readers killed and stopped.
# SOAK_PYTHON_SECONDS: the Python passes' length (default SECONDS).
# scripts/test.sh runs a short one over tcp,self: 120 s with the Java consumer, 60 s with the Python one.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-1800}"
interval="${2:-60}"
consumers="${SOAK_CONSUMERS:-java python}"
cd "$root"
if [[ -z "${NIXL_LIBRARY_DIR:-}" ]]; then
  eval "$(.ci/nixl-setup.sh)"
fi
if [[ " $consumers " == *" python "* && -z "${DYNAMO_PYTHON_PATH:-}" ]]; then
  eval "$(.ci/dynamo-setup.sh)"
fi
./mvnw -q -B -o -pl nixl-connect-benchmarks -am package -DskipTests >&2 \
  || ./mvnw -q -B -pl nixl-connect-benchmarks -am package -DskipTests >&2
# A copy of the classes, jars and Python consumer: a rebuild or edit during a long run must not change what its
# restarted producers and readers run.
snapshot="$(mktemp -d /tmp/nixl-soak-classpath.XXXXXX)"
trap 'rm -rf "$snapshot"' EXIT
cp -r nixl-connect-benchmarks/target/classes nixl-connect-benchmarks/target/lib interop "$snapshot"/
classpath="$snapshot/classes:$(ls "$snapshot"/lib/*.jar | tr '\n' ':')"
status=0
for transports in ${SOAK_TRANSPORTS:-tcp,self default}; do
  for consumer in $consumers; do
    pass_seconds="$seconds"
    if [[ "$consumer" == python ]]; then
      pass_seconds="${SOAK_PYTHON_SECONDS:-$seconds}"
    fi
    echo "== $(date -u +%FT%TZ) $(nproc) cores, load average: $(cut -d' ' -f1-3 /proc/loadavg); UCX_TLS=$transports; $consumer consumer"
    (
      if [[ "$transports" == default ]]; then unset UCX_TLS; else export UCX_TLS="$transports"; fi
      # A fixed heap touched at start (as the producer's): the consumer's RSS then moves with what it keeps, not with
      # how the collector sizes its heap under the load of the moment; NMT tells the JVM's own growth from NIXL's.
      java --enable-native-access=ALL-UNNAMED -Xms512m -Xmx512m -XX:+AlwaysPreTouch -XX:NativeMemoryTracking=summary -Dnixl.library.path="$NIXL_LIBRARY_DIR" -Dsoak.pythonScript="$snapshot/interop/dynamo_soak_consumer.py" \
        -cp "$classpath" io.nixlconnect.benchmarks.NixlSoak "$pass_seconds" "$interval" "$consumer" \
        2> >(grep -v " INFO \| WARN \|Failed to load CuPy" >&2)
    ) || status=1
    echo "== $(date -u +%FT%TZ) load average: $(cut -d' ' -f1-3 /proc/loadavg)"
  done
done
exit "$status"
