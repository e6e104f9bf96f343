#!/usr/bin/env bash
# Builds everything and runs every test. The transfer contract suite runs over the embedded transport
# always, and over a real NIXL too: .ci/nixl-setup.sh fetches NIXL's wheel from PyPI into .ci-cache/.
# Without network the NIXL tests are skipped (they say why) — except in CI, where that is an error.
# Then scripts/consumer-app-test.sh: the getting-started path of a new user, end to end.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if nixl_env="$(.ci/nixl-setup.sh)"; then
  eval "$nixl_env"
elif [[ "${CI:-}" == "true" ]]; then
  echo "test.sh: NIXL could not be set up; CI must test against a real NIXL" >&2
  exit 1
else
  echo "test.sh: NIXL could not be set up; the NIXL tests will be skipped" >&2
fi

# The real dynamo.nixl_connect (ai-dynamo-runtime 1.6.1 from PyPI) for DynamoInteropTest.
if [[ -n "${NIXL_PYTHON_PATH:-}" ]] && dynamo_env="$(.ci/dynamo-setup.sh)"; then
  eval "$dynamo_env"
elif [[ "${CI:-}" == "true" ]]; then
  echo "test.sh: dynamo.nixl_connect could not be set up; CI must test interop with the real module" >&2
  exit 1
else
  echo "test.sh: dynamo.nixl_connect could not be set up; DynamoInteropTest will be skipped" >&2
fi

# etcd (Debian's etcd-server, unpacked into .ci-cache/) for the Dynamo etcd discovery tests (issue 33).
if etcd_env="$(.ci/etcd-setup.sh)"; then
  eval "$etcd_env"
elif [[ "${CI:-}" == "true" ]]; then
  echo "test.sh: etcd could not be set up; CI must test Dynamo's etcd discovery against a real etcd" >&2
  exit 1
else
  echo "test.sh: etcd could not be set up; the Dynamo etcd discovery tests will be skipped" >&2
fi

./mvnw -B -ntp verify "$@"

# A short soak of the NIXL backend as a service runs it (3 minutes, ~4 min wall: aborted requests, spent metadata,
# readers killed and stopped mid-read, producer restarts; benchmarks/run-soak.sh, exits 1 when a target is missed: only
# targets that the machine's load cannot move, growth measured per operation after warm-up; a leak injected with
# NIXL_SOAK_INJECT_LEAK=registration|fd|memory|heap fails it):
# 120 s with a Java consumer over UCX_TLS=tcp,self, then 60 s with the real Python dynamo.nixl_connect over UCX's
# default transports. Not the Python pass over tcp,self: there UCX 1.23 aborts the producer now and then when a
# Python reader dies mid-read (its software GET over TCP; reproduced without Java by benchmarks/run-ucx-tcp-get-abort.sh,
# docs/reliability.md), a fault of UCX that CI should not roll dice on.
# The long runs and their figures: docs/reliability.md.
if [[ -n "${NIXL_LIBRARY_DIR:-}" ]]; then
  SOAK_TRANSPORTS="tcp,self" SOAK_CONSUMERS="java" benchmarks/run-soak.sh "${SOAK_SECONDS:-120}" 30
  if [[ -n "${DYNAMO_PYTHON_PATH:-}" ]]; then
    SOAK_TRANSPORTS="default" SOAK_CONSUMERS="python" benchmarks/run-soak.sh "${SOAK_PYTHON_SECONDS:-60}" 30
  fi
fi

# A short fleet pass per transport (issue 32; benchmarks/run-fleet.sh, about a minute each): 2 producer JVMs x 8
# connectors, a consumer reading round-robin at concurrency 4, a producer restart about every second (1 in 10 a whole
# JVM, SIGKILL), peer idle limits of 2 s. It asserts only what machine load cannot move: no unexpected failure, no
# crash, no process holding more sockets than the fleet accounts for, and the consumer back to its idle descriptors,
# sockets and peers once the producers stopped; it exits 1 naming what failed. NIXL where it is set up.
# The 30-minute runs and their figures: docs/reliability.md ("Fleet runs").
FLEET_TRANSPORTS="embedded${NIXL_LIBRARY_DIR:+ nixl}" FLEET_PRODUCERS=2 FLEET_CONNECTORS=8 FLEET_CONCURRENCY=4 \
  FLEET_RESTART_EVERY=1 FLEET_JVM_RESTART_ONE_IN=10 FLEET_PEER_IDLE_MS=2000 \
  benchmarks/run-fleet.sh "${FLEET_SECONDS:-30}" 10

# Every library jar names its module (module-path users need a stable name).
for jar in nixl-connect-core/target/nixl-connect-core-*[0-9T].jar \
           nixl-connect-dynamo/target/nixl-connect-dynamo-*[0-9T].jar \
           nixl-connect-autoconfigure/target/nixl-connect-autoconfigure-*[0-9T].jar \
           nixl-connect-spring-boot-starter/target/nixl-connect-spring-boot-starter-*[0-9T].jar; do
  if ! unzip -p "$jar" META-INF/MANIFEST.MF | grep -Eq '^Automatic-Module-Name: io\.nixlconnect(\.[a-z]+)?\s*$'; then
    echo "test.sh: $jar has no Automatic-Module-Name" >&2
    exit 1
  fi
done

# The GPU check's bundle (scripts/gpu-check.sh bundle, ~40 s): a device run carries it with the tracked files, 64 MiB
# in all, so the script prints both sizes and fails past 56 MiB (it aims at 48). Needs NIXL's wheel, set up above.
if [[ -n "${NIXL_LIBRARY_DIR:-}" ]]; then
  scripts/gpu-check.sh bundle
fi

# The README promises Java 17 and 25: the core suite again, compiled as above (release 17), run on Java 25.
if java25="$(.ci/java25-setup.sh)"; then
  echo "test.sh: the core suite on $("$java25" -version 2>&1 | head -n 1)" >&2
  ./mvnw -B -ntp -pl nixl-connect-core surefire:test -Djvm="$java25" "$@"
elif [[ "${CI:-}" == "true" ]]; then
  echo "test.sh: no Java 25 could be found or fetched; CI must test on Java 25 too" >&2
  exit 1
else
  echo "test.sh: ******** no Java 25 found or fetched: the core suite was NOT run on Java 25 ********" >&2
fi

# The README's demo with --nixl.connect.backend=nixl, as a user runs it: the jar on Java 25 (~15 s). It must print
# `result: OK` and no restricted-method warning (the jar's manifest grants JNA and JCuda native access).
if [[ -n "${NIXL_LIBRARY_DIR:-}" && -x "${java25:-}" ]]; then
  demo_log="$(mktemp)"
  if ! timeout 300 "$java25" -jar sample-app/target/nixl-connect-sample.jar --nixl.connect.backend=nixl >"$demo_log" 2>&1 \
      || ! grep -qx 'result: OK' "$demo_log" || grep -qi 'restricted method' "$demo_log"; then
    cat "$demo_log" >&2
    echo "test.sh: the README demo on NIXL (Java 25) did not print 'result: OK', or warned of a restricted method" >&2
    exit 1
  fi
  rm -f "$demo_log"
fi

# A fresh application built from the documented pom against freshly installed artifacts (~40 s).
./scripts/consumer-app-test.sh
