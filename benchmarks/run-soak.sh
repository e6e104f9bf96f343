#!/usr/bin/env bash
# Soak of the NIXL backend as a service runs it (issue 22; io.nixlconnect.benchmarks.NixlSoak): a producer JVM
# publishes KV-cache shaped readables and writables per request (256 blocks x 16 KiB over a registered pool) and
# closes each once done; the consumer (this JVM) reads and writes them, and at random aborts requests before they
# are read, reads spent metadata again, starts readers in their own JVM that are SIGKILLed mid-read or SIGSTOPped
# past the drain limit and then killed, and restarts the producer. Prints per interval: operations, failures by
# cause, p50/p99, heap, RSS, kept bytes, loaded peers, registrations; exits 1 when a target is missed.
#
#   benchmarks/run-soak.sh [SECONDS [INTERVAL_SECONDS]]    # default 1800 s, reports every 60 s
#
# Runs over UCX_TLS=tcp,self and then over the default transports (SOAK_TRANSPORTS="tcp,self default" to choose).
# scripts/test.sh runs a short one (SOAK_SECONDS, default 60 s, one pass over tcp,self).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-1800}"
interval="${2:-60}"
cd "$root"
if [[ -z "${NIXL_LIBRARY_DIR:-}" ]]; then
  eval "$(.ci/nixl-setup.sh)"
fi
./mvnw -q -B -o -pl nixl-connect-benchmarks -am package -DskipTests >&2 \
  || ./mvnw -q -B -pl nixl-connect-benchmarks -am package -DskipTests >&2
# A copy of the classes and jars: a rebuild during a long run must not change what its restarted children run.
snapshot="$(mktemp -d /tmp/nixl-soak-classpath.XXXXXX)"
trap 'rm -rf "$snapshot"' EXIT
cp -r nixl-connect-benchmarks/target/classes nixl-connect-benchmarks/target/lib "$snapshot"/
classpath="$snapshot/classes:$(ls "$snapshot"/lib/*.jar | tr '\n' ':')"
status=0
for transports in ${SOAK_TRANSPORTS:-tcp,self default}; do
  echo "== $(date -u +%FT%TZ) $(nproc) cores, load average: $(cut -d' ' -f1-3 /proc/loadavg); UCX_TLS=$transports"
  if [[ "$transports" == default ]]; then
    env -u UCX_TLS java -Xmx512m -Dnixl.library.path="$NIXL_LIBRARY_DIR" -cp "$classpath" \
      io.nixlconnect.benchmarks.NixlSoak "$seconds" "$interval" 2> >(grep -v " INFO \| WARN " >&2) || status=1
  else
    UCX_TLS="$transports" java -Xmx512m -Dnixl.library.path="$NIXL_LIBRARY_DIR" -cp "$classpath" \
      io.nixlconnect.benchmarks.NixlSoak "$seconds" "$interval" 2> >(grep -v " INFO \| WARN " >&2) || status=1
  fi
done
exit "$status"
