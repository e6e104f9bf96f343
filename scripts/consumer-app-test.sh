#!/usr/bin/env bash
# A new user's path, end to end: install nixl-connect as docs/getting-started.md says, then build a fresh
# application from the pom that page documents (copied out of it verbatim), start it, move data and read its
# health. The install goes to a private local repository under target/ (chained to ~/.m2 for everything
# else), so ~/.m2 never sees these snapshots. Then the sample app runs once with its AOT-generated
# initializers (spring.aot.enabled), which `process-aot` produced during the build.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

work="target/consumer-app"
repo="$PWD/$work/m2"
rm -rf "$work"
mkdir -p "$work"
maven_repos=(-Dmaven.repo.local="$repo" -Dmaven.repo.local.tail="$HOME/.m2/repository")

echo "consumer-app-test: ./mvnw -B install -DskipTests (into $repo)"
./mvnw -B -ntp -q install -DskipTests "${maven_repos[@]}"

# What a release to Maven Central needs of each library module: the jar, its sources and its javadoc.
installed="$repo/io/nixlconnect"
for module in nixl-connect-core nixl-connect-autoconfigure nixl-connect-spring-boot-starter; do
  for suffix in .jar -sources.jar -javadoc.jar; do
    ls "$installed/$module"/0.1.0-SNAPSHOT/"$module"-0.1.0-SNAPSHOT"$suffix" > /dev/null
  done
done
ls "$installed/nixl-connect-bom/0.1.0-SNAPSHOT/nixl-connect-bom-0.1.0-SNAPSHOT.pom" > /dev/null

app="$work/app"
mkdir -p "$app"
cp -r scripts/consumer-app/src "$app/"
# The pom: the xml block after the marker comment in getting-started.md, exactly as a reader copies it.
awk '/scripts\/consumer-app-test.sh builds a throw-away application/ {found=1; next}
     found && /^```xml/ {inside=1; next}
     inside && /^```/ {exit}
     inside {print}' docs/getting-started.md > "$app/pom.xml"
grep -q '<artifactId>nixl-connect-spring-boot-starter</artifactId>' "$app/pom.xml" \
  || { echo "consumer-app-test: no pom found in docs/getting-started.md" >&2; exit 1; }
# The guide's two classes, as compiled and tested in the sample app, moved to the application's package.
for class in GreetingController GreetingClient; do
  sed 's/^package io\.nixlconnect\.sample\.docs;/package com.example.worker;/' \
    "sample-app/src/test/java/io/nixlconnect/sample/docs/$class.java" > "$app/src/main/java/com/example/worker/$class.java"
done

echo "consumer-app-test: building the application from the documented pom"
./mvnw -B -ntp -q -f "$app/pom.xml" package "${maven_repos[@]}"

run_bounded() { # name, command...: runs it for at most 120 s; its output goes to $work/<name>.log
  local name="$1"; shift
  "$@" > "$work/$name.log" 2>&1 &
  local pid=$! waited=0
  while kill -0 "$pid" 2>/dev/null && (( waited < 120 )); do sleep 1; waited=$((waited + 1)); done
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"; wait "$pid" || true
    echo "consumer-app-test: $name did not finish in 120 s" >&2; cat "$work/$name.log" >&2; return 1
  fi
  if ! wait "$pid"; then
    echo "consumer-app-test: $name failed" >&2; cat "$work/$name.log" >&2; return 1
  fi
}

echo "consumer-app-test: starting it"
run_bounded app java -jar "$app/target/my-worker-0.0.1-SNAPSHOT.jar"
grep '^consumer-app:' "$work/app.log"

sample_jar="sample-app/target/nixl-connect-sample.jar"
echo "consumer-app-test: the sample app on its AOT-generated initializers"
run_bounded sample-aot java -Dspring.aot.enabled=true -jar "$sample_jar" --sample.tensor-size=8MB
grep -q '^result: OK' "$work/sample-aot.log" || { cat "$work/sample-aot.log" >&2; exit 1; }
echo "consumer-app-test: OK"
