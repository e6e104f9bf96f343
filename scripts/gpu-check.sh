#!/usr/bin/env bash
# The one prepared check of nixl-connect's GPU path, in two steps on two machines:
#
#   scripts/gpu-check.sh bundle   here (JDK + Maven wrapper + network to Maven Central and PyPI, or their
#                                 caches): builds, then writes .gpu-bundle/ -- a jlinked Java runtime, the
#                                 jars, the test classes, the JUnit console launcher, NIXL's native libraries
#                                 from its PyPI wheel (xz-compressed) and run.sh. Fails if the bundle reaches
#                                 64 MiB (what a device run may carry).
#   scripts/gpu-check.sh run      there (Linux x86-64 with an NVIDIA GPU; no Java, Maven or NIXL needed):
#                                 runs .gpu-bundle/run.sh, which can also be copied anywhere and started as is.
#
# run.sh checks, printing one "CHECK <name>: PASS|FAIL|SKIP ..." line each and the details above them:
#   environment  nvidia-smi, driver and CUDA versions, libcuda.so.1 and libcudart.so.12 found or not
#   gpu-check    io.nixlconnect.cuda.GpuCheck (devices, round trips, copy bandwidth), GPU required
#   junit-gpu    the JUnit GPU tests (CUDA memory, embedded GPU transfers, availability, buffer lifecycle)
#                through the JUnit console launcher with -Dnixl.test.gpu.required=true
#   nixl-vram    VRAM over NIXL, READ and WRITE (NixlGpuTransferTest) with UCX_LOG_LEVEL=info captured
#   context      the CUDA context-stack test (a thread's own context survives library calls)
#   bandwidth    VRAM<->VRAM and VRAM<->host by READ and WRITE, embedded (staged) and NIXL
# Exit status of run: 0 every check passed; 1 a check failed; 3 no usable GPU although one is expected (the
# reason is printed; the remaining checks are skipped); 4 the bundle is missing. Logs go to
# $GPU_CHECK_LOGS (default: a new folder under ${TMPDIR:-/tmp}).
#
# Environment: GPU_BUNDLE (bundle folder, default <repo>/.gpu-bundle), JLINK_JDK (JDK with jmods used for
# jlink, default $JAVA_HOME or the java on PATH).
set -euo pipefail

script_dir="${BASH_SOURCE[0]%/*}"
[[ "$script_dir" == "${BASH_SOURCE[0]}" ]] && script_dir=.
repo="$(cd "$script_dir/.." && pwd)"
bundle="${GPU_BUNDLE:-$repo/.gpu-bundle}"
max_bundle_mib=64
# What jdeps finds in the bundled jars (JNA, Jackson, JCuda, logback, AssertJ, the JUnit console launcher), less
# java.desktop (optional AWT/java.beans paths only); jdk.unsupported is for JNA and Jackson reaching sun.misc.
modules=java.base,java.logging,java.sql,java.xml,java.management,java.naming,java.instrument,jdk.unsupported

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

# NIXL's libnixl_capi.so, the UCX plugin, UCX's CUDA and shared-memory modules, and everything of the wheel they
# load, in the wheel's own layout (the rpaths and UCX's module directory are relative to it), as one tar.xz.
pack_nixl() {
    local out="$1"
    local env; env="$("$repo/.ci/nixl-setup.sh")" || die "NIXL's wheel could not be set up (.ci/nixl-setup.sh)"
    local libdir; libdir="$(sed -n 's/^export NIXL_LIBRARY_DIR="\(.*\)"$/\1/p' <<<"$env")"
    [[ -f "$libdir/libnixl_capi.so" ]] || die "no libnixl_capi.so in '$libdir'"
    local root; root="$(cd "$libdir/.." && pwd -P)"
    local wheel_libs; wheel_libs="$(ls -d "$root"/*.libs | grep -v mesonpy | head -n 1)"
    local -a seeds=("$libdir/libnixl_capi.so" "$libdir/plugins/libplugin_UCX.so")
    local module
    for module in "$wheel_libs"/ucx/libuct_cuda.so* "$wheel_libs"/ucx/libucm_cuda.so* "$wheel_libs"/ucx/libuct_cma.so*; do
        if [[ -f "$module" ]]; then seeds+=("$module"); fi
    done
    # The seeds and what the loader resolves for them inside the wheel (libcuda/libcudart come from the device).
    local list; list="$(mktemp)"
    {
        printf '%s\n' "${seeds[@]}"
        ldd "${seeds[@]}" 2>/dev/null | awk '$3 ~ /^\// {print $3}'
    } | while read -r file; do
        file="$(readlink -f "$file")"
        if [[ "$file" == "$root"/* ]]; then echo "${file#"$root"/}"; fi
    done | sort -u > "$list"
    (cd "$root" && tar --create --file - --files-from "$list") | xz -9 --threads=0 > "$out"
    echo "gpu-check: NIXL: $(wc -l < "$list") files of $(basename "$root"), $(( $(stat -c %s "$out") / 1024 )) KiB as xz"
    rm -f "$list"
}

make_bundle() {
    local jdk; jdk="$(find_jdk)"
    local core="$repo/nixl-connect-core"
    echo "gpu-check: building nixl-connect-core (tests compiled, not run)"
    (cd "$repo" && ./mvnw -q -B -ntp -pl nixl-connect-core -am -DskipTests package)

    rm -rf "$bundle"
    mkdir -p "$bundle/lib" "$bundle/junit"
    # Runtime and test libraries; JUnit itself comes as the console launcher's standalone jar instead.
    (cd "$repo" && ./mvnw -q -B -ntp -pl nixl-connect-core dependency:copy-dependencies \
        -DincludeScope=test -DoutputDirectory="$bundle/lib")
    local launcher_jar junit_version
    launcher_jar="$(ls "$bundle"/lib/junit-platform-launcher-*.jar | head -n 1)"
    junit_version="${launcher_jar##*/junit-platform-launcher-}"
    junit_version="${junit_version%.jar}"
    rm -f "$bundle"/lib/junit-*.jar "$bundle"/lib/opentest4j-*.jar "$bundle"/lib/apiguardian-*.jar
    # Not needed by the GPU tests, and too large for the 64 MiB: ByteBuddy (AssertJ's soft assertions and
    # assumptions only) and Jackson 2 (the Jackson interoperability test only).
    rm -f "$bundle"/lib/byte-buddy-*.jar "$bundle"/lib/jackson-core-2.*.jar "$bundle"/lib/jackson-databind-2.*.jar
    (cd "$repo" && ./mvnw -q -B -ntp -pl nixl-connect-core dependency:copy \
        -Dartifact="org.junit.platform:junit-platform-console-standalone:$junit_version" \
        -DoutputDirectory="$bundle/junit")
    [[ -f "$bundle/junit/junit-platform-console-standalone-$junit_version.jar" ]] \
        || die "the JUnit console launcher $junit_version did not resolve"

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
    "$jdk/bin/jar" --create --file "$bundle/lib/nixl-connect-core-tests.jar" -C "$core/target/test-classes" .

    pack_nixl "$bundle/nixl.tar.xz"

    echo "gpu-check: linking a Java runtime from $jdk ($modules)"
    "$jdk/bin/jlink" --add-modules "$modules" --strip-debug --no-header-files --no-man-pages \
        --compress=2 --output "$bundle/runtime" 2> >(grep -v -i 'compress.*deprecated' >&2)

    cp "$repo/scripts/gpu-check-run.sh" "$bundle/run.sh"
    chmod +x "$bundle/run.sh"

    # A device run carries the repository's tracked files and the bundle together: both count.
    local size_kib tracked_kib
    size_kib="$(du -sk "$bundle" | cut -f1)"
    tracked_kib="$(cd "$repo" && git ls-files -z 2>/dev/null | du -ck --files0-from=- 2>/dev/null | tail -n 1 | cut -f1)"
    tracked_kib="${tracked_kib:-0}"
    echo "gpu-check: bundle $bundle: $((size_kib / 1024)) MiB ($size_kib KiB), with the tracked files" \
        "$(((size_kib + tracked_kib) / 1024)) MiB; limit $max_bundle_mib MiB"
    (( size_kib + tracked_kib < max_bundle_mib * 1024 )) || die "bundle and tracked files exceed $max_bundle_mib MiB"
}

run_bundle() {
    [[ -x "$bundle/run.sh" ]] || die "no bundle at $bundle: run '$0 bundle' on a machine with a JDK first" 4
    exec "$BASH" "$bundle/run.sh" "$@"
}

case "${1:-}" in
    bundle) shift; make_bundle "$@" ;;
    run) shift; run_bundle "$@" ;;
    *) echo "usage: $0 bundle | run" >&2; exit 64 ;;
esac
