#!/usr/bin/env bash
# What TLS and the shared secret cost the embedded transport: TransferBenchmark EMBEDDED three times, in one
# run on one machine, loopback only: plain TCP, shared secret only, TLS (self-signed EC key made here with
# keytool; both JVMs present it and trust it).
# Usage: benchmarks/run-embedded-tls.sh [maxSizeBytes]      Results: paste into docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
max_size="${1:-268435456}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "== $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/Mem:/{print $2}') GiB"
echo "== java: $(java -version 2>&1 | head -1)"
keytool -genkeypair -alias bench -keyalg EC -groupname secp256r1 -dname CN=bench -ext SAN=ip:127.0.0.1 \
    -validity 2 -storetype PKCS12 -keystore "$work/bench.p12" -storepass changeit -keypass changeit >/dev/null 2>&1

./mvnw -q -B -ntp -pl nixl-connect-benchmarks -am package -DskipTests
run() {
  java --enable-native-access=ALL-UNNAMED -cp "nixl-connect-benchmarks/target/classes:nixl-connect-benchmarks/target/lib/*" \
      -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -Dbench.sameHostCopy=false "$@" \
      io.nixlconnect.benchmarks.TransferBenchmark EMBEDDED "$max_size"
}
echo "== plain TCP"
run
echo "== shared secret (authentication per connection, then plain TCP)"
run -Dbench.embedded.secret=benchmark-shared-secret-0123456789
echo "== TLS (JDK provider, default cipher suites)"
run -Dbench.embedded.tls.keystore="$work/bench.p12" -Dbench.embedded.tls.password=changeit
