#!/usr/bin/env bash
# Issue 32, "embedded fleet": a consumer reads once from each of N producers that start, serve and leave
# (DepartedProducersBenchmark), on this branch's nixl-connect-core and, with BASELINE=<git revision>, on that
# revision's too (built in a temporary worktree): the same benchmark class, only the library under it differs.
# Prints, for each library: consumer sockets, cached peers, open connections, peer counters and health-details size
# every 100 producers and at the end; then the same under `ulimit -n $LIMIT` (default 300), where leaked sockets run
# the consumer out of file descriptors; then FirstOperationBenchmark embedded (first read from a never-seen
# producer against the steady p50) on this branch.
# Usage: [BASELINE=125fd11] [LIMIT=300] benchmarks/run-departed-producers.sh [producers]   Results: docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
producers="${1:-600}"
limit="${LIMIT:-300}"

echo "== $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/Mem:/{print $2}') GiB, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== java: $(java -version 2>&1 | head -1); this branch: $(git rev-parse --short HEAD)"

./mvnw -q -B -ntp ${MAVEN_OFFLINE:+-o} -pl nixl-connect-benchmarks -am package -DskipTests
classes="nixl-connect-benchmarks/target/classes:nixl-connect-benchmarks/target/lib/*"
# The dependencies but nixl-connect-core, which each run names: this branch's or the baseline's.
others="nixl-connect-benchmarks/target/classes:$(ls nixl-connect-benchmarks/target/lib/*.jar | grep -v '/nixl-connect-core-' | paste -sd:)"
branch_jar="$(ls nixl-connect-benchmarks/target/lib/nixl-connect-core-*.jar | head -1)"

run() { # LABEL CORE_JAR [ulimit]
  local label="$1" core="$2" files="${3:-}"
  local cp="$core:$others"
  echo "-- $label${files:+, ulimit -n $files}, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  ( [[ -n "$files" ]] && ulimit -n "$files"
    # Under the limit, one producer JVM for all: starting the next needs pipes, which a consumer out of descriptors
    # cannot make.
    java -Xmx512m -cp "$cp" -Dorg.slf4j.simpleLogger.defaultLogLevel=error ${files:+-Dbench.departed.perJvm=1000000} \
        io.nixlconnect.benchmarks.DepartedProducersBenchmark "$producers" ) || echo "   (exit status $?)"
}

baseline_jar=""
if [[ -n "${BASELINE:-}" ]]; then
  tree="$(mktemp -d)/baseline"
  git worktree add -q --detach "$tree" "$BASELINE"
  trap 'git worktree remove --force "$tree"' EXIT
  (cd "$tree" && ./mvnw -q -B -ntp ${MAVEN_OFFLINE:+-o} -pl nixl-connect-core package -DskipTests)
  baseline_jar="$(ls "$tree"/nixl-connect-core/target/nixl-connect-core-*.jar | grep -v -e sources -e javadoc | head -1)"
  echo "== baseline: $BASELINE ($(git rev-parse --short "$BASELINE")), $baseline_jar"
  run "baseline $BASELINE" "$baseline_jar"
fi
run "this branch" "$branch_jar"
if [[ -n "$baseline_jar" ]]; then
  run "baseline $BASELINE" "$baseline_jar" "$limit"
fi
run "this branch" "$branch_jar" "$limit"

echo "== FirstOperationBenchmark embedded (this branch): first read from a never-seen producer vs steady p50"
java -cp "$classes" -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
    io.nixlconnect.benchmarks.FirstOperationBenchmark embedded 15
echo "== load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
