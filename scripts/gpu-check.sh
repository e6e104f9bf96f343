#!/usr/bin/env bash
# GPU check for nixl-connect's CUDA support, in two steps on two machines:
#
#   scripts/gpu-check.sh bundle   here (JDK + Maven wrapper): builds, then writes .gpu-bundle/ -- a
#                                 jlinked Java runtime, the jars (JCuda natives: linux-x86_64 driver only)
#                                 and run.sh. Must stay under 64 MiB.
#   scripts/gpu-check.sh run      there (Linux x86-64, NVIDIA driver, no Java or Maven needed):
#                                 runs io.nixlconnect.cuda.GpuCheck from the bundle. The bundle can also
#                                 be copied anywhere and started with .gpu-bundle/run.sh.
#
# Extra arguments after "run" go to GpuCheck (--size-mib N, --iterations N).
# Exit status of run: 0 all checks passed, 1 a check failed, 2 no usable GPU (the reason is printed),
# 3 the bundle is missing.
#
# Environment: GPU_BUNDLE (bundle folder, default <repo>/.gpu-bundle), JLINK_JDK (JDK with jmods used
# for jlink, default $JAVA_HOME or the java on PATH).
set -euo pipefail

# Plain bash, no coreutils, for the run step on a bare machine.
script_dir="${BASH_SOURCE[0]%/*}"
[[ "$script_dir" == "${BASH_SOURCE[0]}" ]] && script_dir=.
repo="$(cd "$script_dir/.." && pwd)"
bundle="${GPU_BUNDLE:-$repo/.gpu-bundle}"
max_bundle_mib=64
# What jdeps finds in the bundled jars, less java.desktop (only optional AWT/java.beans paths in JNA and
# Jackson); jdk.unsupported is for JNA and Jackson reaching sun.misc reflectively. Add modules here
# when the check grows (e.g. java.management).
modules=java.base,java.logging,java.sql,jdk.unsupported

die() { echo "gpu-check: $1" >&2; exit "${2:-1}"; }

find_jdk() {
    local jdk="${JLINK_JDK:-${JAVA_HOME:-}}"
    if [[ -z "$jdk" ]]; then
        command -v java >/dev/null || die "no JDK found: set JLINK_JDK or JAVA_HOME"
        jdk="$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")"
    fi
    [[ -x "$jdk/bin/jlink" ]] || die "$jdk has no bin/jlink: set JLINK_JDK to a full JDK (17+)"
    [[ -d "$jdk/jmods" ]] || echo "gpu-check: $jdk has no jmods/; jlink works only if the JDK can link from its run-time image" >&2
    echo "$jdk"
}

make_bundle() {
    local jdk; jdk="$(find_jdk)"
    local core="$repo/nixl-connect-core"
    echo "gpu-check: building nixl-connect-core (tests compiled, not run)"
    (cd "$repo" && ./mvnw -q -B -pl nixl-connect-core -am -DskipTests package)

    rm -rf "$bundle"
    mkdir -p "$bundle/lib"
    (cd "$repo" && ./mvnw -q -B -pl nixl-connect-core dependency:copy-dependencies \
        -DincludeScope=runtime -DoutputDirectory="$bundle/lib")
    # Of JCuda's natives only linux-x86_64 and only the driver API library (1 of 9.5 MB) are used;
    # JCuda loads it from lib/ on the classpath, so a jar holding just that file is enough.
    find "$bundle/lib" -name 'jcuda-natives-*.jar' ! -name '*-linux-x86_64.jar' -delete
    local natives
    natives="$(ls "$bundle/lib"/jcuda-natives-*-linux-x86_64.jar 2>/dev/null | head -n 1)"
    [[ -n "$natives" ]] || die "org.jcuda:jcuda-natives:linux-x86_64 did not resolve"
    local unpacked="$bundle/.natives"
    mkdir -p "$unpacked"
    (cd "$unpacked" && "$jdk/bin/jar" --extract --file "$natives")
    ls "$unpacked"/lib/libJCudaDriver-*-linux-x86_64.so >/dev/null 2>&1 || die "no libJCudaDriver in $natives"
    find "$unpacked/lib" -type f ! -name 'libJCudaDriver-*' -delete
    rm "$natives"
    "$jdk/bin/jar" --create --file "${natives%.jar}-driver-only.jar" -C "$unpacked" lib
    rm -rf "$unpacked"

    local core_jar
    core_jar="$(ls "$core"/target/nixl-connect-core-*.jar | grep -v -- '-tests\.jar$' | head -n 1)"
    cp "$core_jar" "$bundle/lib/"
    # GpuCheck lives with the tests; the other test classes come along unused (their test libraries do not).
    "$jdk/bin/jar" --create --file "$bundle/lib/nixl-connect-core-gpu-check.jar" -C "$core/target/test-classes" .

    echo "gpu-check: linking a Java runtime from $jdk ($modules)"
    "$jdk/bin/jlink" --add-modules "$modules" --strip-debug --no-header-files --no-man-pages \
        --compress=2 --output "$bundle/runtime" 2> >(grep -v -i 'compress.*deprecated' >&2)

    cat > "$bundle/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs the nixl-connect GPU check with the bundled runtime; exit 0 passed, 1 failed, 2 no GPU.
here="${BASH_SOURCE[0]%/*}"
[[ "$here" == "${BASH_SOURCE[0]}" ]] && here=.
exec "$here/runtime/bin/java" -cp "$here/lib/*" io.nixlconnect.cuda.GpuCheck "$@"
RUN
    chmod +x "$bundle/run.sh"

    local size_kib
    size_kib="$(du -sk "$bundle" | cut -f1)"
    echo "gpu-check: bundle $bundle: $((size_kib / 1024)) MiB ($size_kib KiB)"
    (( size_kib < max_bundle_mib * 1024 )) || die "bundle exceeds $max_bundle_mib MiB"
}

run_bundle() {
    [[ -x "$bundle/run.sh" ]] || die "no bundle at $bundle: run '$0 bundle' on a machine with a JDK first" 3
    exec "$BASH" "$bundle/run.sh" "$@"
}

case "${1:-}" in
    bundle) shift; make_bundle "$@" ;;
    run) shift; run_bundle "$@" ;;
    *) echo "usage: $0 bundle | run [--size-mib N] [--iterations N]" >&2; exit 64 ;;
esac
