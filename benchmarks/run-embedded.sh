#!/usr/bin/env bash
# Embedded-transport benchmark beside UCX's own: in one run, on one machine, loopback only.
#   1. ucx_perftest -t ucp_get, 256 MiB and 1 GiB, with UCX_TLS=sm,self (shared memory / cross-memory attach:
#      the same-host anchor) and UCX_TLS=tcp, plus a 4 KiB latency over tcp. Debian package ucx-utils
#      (installed if missing; the NIXL wheel bundles UCX's libraries but not ucx_perftest).
#      For each: bandwidth, and bytes per CPU-second (user + system time of both processes, from bash's
#      `times`, setup and warm-up included; ucx_perftest busy-polls, so expect ~2 CPUs busy).
#   2. TransferBenchmark EMBEDDED, three times: same-host copy allowed (cross-memory attach, the default), and
#      -Dbench.sameHostCopy=false (TCP) with each transfer on one connection (-Dbench.tcpStreams=1) and with
#      large ones striped over $TCP_STREAMS (default 2). READ bandwidth 4 KiB … maxSize between two JVMs, bytes
#      per CPU-second of both JVMs, the path taken (" xN": striped over N connections), and the p50/p99
#      latency of one complete 4 KiB operation.
# Usage: [TCP_STREAMS=N] benchmarks/run-embedded.sh [maxSizeBytes]      Results: paste into docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
max_size="${1:-1073741824}"
# Connections a large embedded TCP transfer is striped over in the striped run (the library's default is 1).
tcp_streams="${TCP_STREAMS:-2}"
port=13337

echo "== $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/Mem:/{print $2}') GiB, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== java: $(java -version 2>&1 | head -1)"

if ! command -v ucx_perftest >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ucx-utils >/dev/null
fi

ticks=$(getconf CLK_TCK)
# CPU seconds (user + system) a process used, from /proc/PID/stat, while it still exists.
cpu_of() { awk -v t="$ticks" '{ printf "%.3f", ($14 + $15) / t }' "/proc/$1/stat" 2>/dev/null || echo 0; }

# perftest TLS SIZE ITERATIONS: prints ucx_perftest's Final line and the bytes per CPU-second of both sides.
perftest() {
  local tls="$1" size="$2" iterations="$3" warmup=2
  UCX_TLS="$tls" ucx_perftest -p "$port" >/dev/null 2>&1 &
  local server=$!
  sleep 1
  local out
  out=$( (UCX_TLS="$tls" ucx_perftest 127.0.0.1 -p "$port" -t ucp_get -s "$size" -n "$iterations" -w "$warmup" 2>&1 &
          local client=$!
          # Sample both processes' CPU time until the client exits (the server exits with it).
          local c=0 s=0
          while [[ "$(awk '{ print $3 }' "/proc/$client/stat" 2>/dev/null)" =~ ^[RSD]$ ]]; do
            c=$(cpu_of "$client"); s=$(cpu_of "$server"); sleep 0.05
          done
          wait "$client"
          echo "CPU $c $s") )
  wait "$server" 2>/dev/null || true
  local final cpu
  final=$(grep -E 'Final' <<<"$out" | tail -1)
  cpu=$(awk '/^CPU/{ print $2 + $3 }' <<<"$out")
  echo "$final"
  # ucx_perftest's MB/s are MiB/s; the Java harness prints GB/s (10^9 bytes).
  awk '{ if ($7 + 0 > 0) printf "   overall bandwidth %.2f GB/s\n", $7 * 1048576 / 1e9 }' <<<"$final"
  awk -v b="$size" -v n="$((iterations + warmup))" -v c="$cpu" \
      'BEGIN { if (c > 0) printf "   %s bytes x %d in %.2f CPU-s of both processes: %.2f GB/CPU-second\n", b, n, c, b * n / c / 1e9 }'
}

echo "== ucx_perftest $(ucx_info -v | head -1 | sed 's/# //'), ucp_get (Final columns: iterations, latency typical/average/overall in usec, bandwidth average/overall in MiB/s, message rate average/overall; the overall bandwidth, converted to GB/s, is the figure)"
for tls in sm,self tcp; do
  for size in 268435456 1073741824; do
    if (( size > max_size && size > 268435456 )); then continue; fi
    echo "-- UCX_TLS=$tls, $((size >> 20)) MiB x 10"
    perftest "$tls" "$size" 10
  done
done

echo "== ucx_perftest UCX_TLS=tcp, ucp_get 4 KiB latency (usec columns)"
UCX_TLS=tcp ucx_perftest -p "$port" >/dev/null 2>&1 &
server=$!
sleep 1
UCX_TLS=tcp ucx_perftest 127.0.0.1 -p "$port" -t ucp_get -s 4096 -n 10000 -w 1000 2>&1 | grep -E 'Final' | tail -1
wait "$server" 2>/dev/null || true

echo "== nixl-connect embedded transport, two JVMs"
./mvnw -q -B -ntp -pl nixl-connect-benchmarks -am package -DskipTests
# same-host copy allowed, TCP streams per large transfer: the defaults; TCP on one connection; TCP striped.
for run in "true 1" "false 1" "false $tcp_streams"; do
  read -r same_host streams <<<"$run"
  echo "-- same-host copy allowed: $same_host, TCP streams per large transfer: $streams, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  java --enable-native-access=ALL-UNNAMED -cp "nixl-connect-benchmarks/target/classes:nixl-connect-benchmarks/target/lib/*" \
      -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -Dbench.sameHostCopy="$same_host" -Dbench.tcpStreams="$streams" \
      io.nixlconnect.benchmarks.TransferBenchmark EMBEDDED "$max_size"
done
echo "== load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
