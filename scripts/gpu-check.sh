#!/usr/bin/env bash
# The one prepared check of nixl-connect's GPU path, in two steps on two machines:
#
#   scripts/gpu-check.sh bundle   here (JDK + Maven wrapper + network to Maven Central and PyPI, or their
#                                 caches): builds, then writes .gpu-bundle/ -- a jlinked Java runtime
#                                 (xz-compressed), the jars the GPU checks use, the test classes they load, the
#                                 JUnit console launcher, NIXL's native libraries from its PyPI wheel
#                                 (xz-compressed) and run.sh: ~27 MiB, ~31 MiB with the tracked files. Warns
#                                 past 48 MiB with the tracked files and fails past 56 MiB (a device run
#                                 carries 64 MiB in all); scripts/test.sh builds it, so CI fails there too.
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
# jlink, default $JAVA_HOME or the java on PATH), GPU_BUNDLE_MAX_MIB (the failing line, default 56).
set -euo pipefail

script_dir="${BASH_SOURCE[0]%/*}"
[[ "$script_dir" == "${BASH_SOURCE[0]}" ]] && script_dir=.
repo="$(cd "$script_dir/.." && pwd)"
bundle="${GPU_BUNDLE:-$repo/.gpu-bundle}"
# A device run carries the working tree and the bundle, 64 MiB in all: the bundle aims at 48 MiB with the tracked
# files (room for the repository to grow) and fails past 56 MiB (CI builds the bundle, so CI fails there too).
target_bundle_mib=48
max_bundle_mib="${GPU_BUNDLE_MAX_MIB:-56}"
# What jdeps finds in the bundled jars (JNA, JCuda, logback with its optional java.sql/java.naming/java.management
# paths, AssertJ, the JUnit console launcher), less java.desktop (JNA's optional AWT paths) and jdk.jfr (the
# launcher's optional flight recorder listener); jdk.unsupported is for JNA reaching sun.misc.
modules=java.base,java.logging,java.sql,java.xml,java.management,java.naming,jdk.unsupported

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
    (cd "$root" && tar --create --file - --files-from "$list") | xz -1 --threads=0 > "$out"
    echo "gpu-check: NIXL: $(wc -l < "$list") files of $(basename "$root"), $(( $(stat -c %s "$out") / 1024 )) KiB as xz"
    rm -f "$list"
}

# The classes of the test tree that the GPU checks load: those run.sh names and, transitively, the test classes they
# reference (jdeps, class level), with their nested classes. Prints one binary name a line.
gpu_test_classes() {
    local classes="$1" classpath="$2" jdk="$3"
    local seeds
    seeds="$(grep -oE 'io\.nixlconnect\.[A-Za-z0-9_.]*\.?[A-Z][A-Za-z0-9_]*' "$repo/scripts/gpu-check-run.sh" | sort -u)"
    [[ -n "$seeds" ]] || die "scripts/gpu-check-run.sh names no test class"
    "$jdk/bin/jdeps" -verbose:class -filter:none --multi-release 17 --ignore-missing-deps -cp "$classpath" "$classes" \
        | awk -v seeds="$(paste -sd' ' <<<"$seeds")" '
            $2 == "->" && $4 == "test-classes" { next_of[$1] = next_of[$1] " " $3 }
            END {
                n = split(seeds, queue, " ")
                for (i = 1; i <= n; i++) seen[queue[i]] = 1
                for (i = 1; i <= n; i++) {
                    m = split(next_of[queue[i]], targets, " ")
                    for (j = 1; j <= m; j++) if (!(targets[j] in seen)) { seen[targets[j]] = 1; queue[++n] = targets[j] }
                }
                for (c in seen) print c
            }'
}

make_bundle() {
    local jdk; jdk="$(find_jdk)"
    local core="$repo/nixl-connect-core"
    rm -rf "$bundle"
    mkdir -p "$bundle/lib" "$bundle/junit"
    local staging="$bundle/.staging"
    mkdir -p "$staging/lib"
    # Every test-scope library first; only what the GPU checks reach is kept below. JUnit itself comes as the
    # console launcher's standalone jar instead.
    echo "gpu-check: building nixl-connect-core (tests compiled, not run)"
    (cd "$repo" && ./mvnw -q -B -ntp -pl nixl-connect-core -am -DskipTests package dependency:copy-dependencies \
        -DincludeScope=test -DoutputDirectory="$staging/lib")
    local launcher_jar junit_version
    launcher_jar="$(ls "$staging"/lib/junit-platform-launcher-*.jar | head -n 1)"
    junit_version="${launcher_jar##*/junit-platform-launcher-}"
    junit_version="${junit_version%.jar}"
    rm -f "$staging"/lib/junit-*.jar "$staging"/lib/opentest4j-*.jar "$staging"/lib/apiguardian-*.jar
    (cd "$repo" && ./mvnw -q -B -ntp -pl nixl-connect-core dependency:copy \
        -Dartifact="org.junit.platform:junit-platform-console-standalone:$junit_version" \
        -DoutputDirectory="$bundle/junit")
    local launcher="$bundle/junit/junit-platform-console-standalone-$junit_version.jar"
    [[ -f "$launcher" ]] || die "the JUnit console launcher $junit_version did not resolve"

    # Of JCuda's natives only linux-x86_64 and only the driver API library (1 of 9.5 MB) are used;
    # JCuda loads it from lib/ on the classpath, so a jar holding just that file is enough.
    find "$staging/lib" -name 'jcuda-natives-*.jar' ! -name '*-linux-x86_64.jar' -delete
    local natives
    natives="$(ls "$staging/lib"/jcuda-natives-*-linux-x86_64.jar 2>/dev/null | head -n 1)"
    [[ -n "$natives" ]] || die "org.jcuda:jcuda-natives:linux-x86_64 did not resolve"
    local unpacked="$staging/natives"
    mkdir -p "$unpacked"
    (cd "$unpacked" && "$jdk/bin/jar" --extract --file "$natives")
    ls "$unpacked"/lib/libJCudaDriver-*-linux-x86_64.so >/dev/null 2>&1 || die "no libJCudaDriver in $natives"
    find "$unpacked/lib" -type f ! -name 'libJCudaDriver-*' -delete
    rm "$natives"
    "$jdk/bin/jar" --create --file "$bundle/lib/$(basename "${natives%.jar}")-driver-only.jar" -C "$unpacked" lib

    # The library's own jar (not its -sources or -javadoc jar).
    local core_jar
    core_jar="$(ls "$core"/target/nixl-connect-core-*.jar | grep -Ev -- '-(sources|javadoc|tests)\.jar$' | head -n 1)"
    [[ -n "$core_jar" ]] || die "no nixl-connect-core jar in $core/target"
    cp "$core_jar" "$bundle/lib/"

    # Of the test tree, the classes the GPU checks load (with their resources): not ArchUnit's, the Jackson 2
    # interoperability test's or the soak's dependencies.
    local all_jars; all_jars="$(ls "$staging"/lib/*.jar "$bundle"/lib/*.jar "$launcher" | paste -sd:)"
    local test_classes="$staging/test-classes"
    mkdir -p "$test_classes"
    (cd "$core/target/test-classes" && find . -type f ! -name '*.class' -exec cp --parents -t "$test_classes" {} +)
    local class count=0
    while read -r class; do
        local path="${class//.//}"
        [[ -f "$core/target/test-classes/$path.class" ]] || die "run.sh names $class, which is not a test class"
        (cd "$core/target/test-classes" && find "$(dirname "$path")" -maxdepth 1 \
            \( -name "$(basename "$path").class" -o -name "$(basename "$path")\$*.class" \) -exec cp --parents -t "$test_classes" {} +)
        count=$((count + 1))
    done < <(gpu_test_classes "$core/target/test-classes" "$all_jars" "$jdk")
    "$jdk/bin/jar" --create --file "$bundle/lib/nixl-connect-core-tests.jar" -C "$test_classes" .
    # The libraries those classes and the library's jar use directly (jdeps), and logback: SLF4J finds it as a
    # service, which jdeps cannot see, and the checks' logs need it. Not what those libraries use only optionally
    # (ByteBuddy, 9 MB: AssertJ's soft assertions and assumptions, which the GPU tests do not use).
    local reached
    reached="$("$jdk/bin/jdeps" -summary --multi-release 17 --ignore-missing-deps -cp "$all_jars" \
        "$bundle/lib/nixl-connect-core-tests.jar" "$bundle/lib/$(basename "$core_jar")" 2>/dev/null \
        | awk '$2 == "->" && $3 ~ /\.jar$/ {print $3}' | sort -u)"
    local jar kept=()
    for jar in "$staging"/lib/*.jar; do
        if grep -qxF "$jar" <<<"$reached" || [[ "$(basename "$jar")" == logback-* ]]; then
            cp "$jar" "$bundle/lib/"
            kept+=("$(basename "$jar")")
        fi
    done
    echo "gpu-check: $count test classes (and their nested classes); libraries: ${kept[*]}"
    # What the kept classes need must all be there: a missing class would fail the one GPU run there is.
    local missing
    missing="$("$jdk/bin/jdeps" --missing-deps --multi-release 17 -cp "$(ls "$bundle"/lib/*.jar "$launcher" | paste -sd:)" \
        "$bundle/lib/nixl-connect-core-tests.jar" "$bundle/lib/$(basename "$core_jar")" 2>&1 || true)"
    if grep -q 'not found' <<<"$missing"; then
        echo "$missing" >&2
        die "the bundled test classes need classes the bundle does not hold"
    fi

    pack_nixl "$bundle/nixl.tar.xz"

    # Uncompressed modules in an xz archive: 15 MB, where jlink's own zip compression leaves 39 MB (libjvm.so
    # alone is 23 MB, and jlink does not compress native libraries). run.sh unpacks it next to its logs. xz -1
    # (here and for NIXL): 4 MB more than -6 in all, a fifth of its time (8 s of CPU instead of 40; CI builds this).
    echo "gpu-check: linking a Java runtime from $jdk ($modules)"
    "$jdk/bin/jlink" --add-modules "$modules" --strip-debug --no-header-files --no-man-pages \
        --output "$staging/runtime"
    tar --create --directory "$staging/runtime" --file - . | xz -1 --threads=0 > "$bundle/runtime.tar.xz"
    rm -rf "$staging"

    cp "$repo/scripts/gpu-check-run.sh" "$bundle/run.sh"
    chmod +x "$bundle/run.sh"

    # A device run carries the repository's tracked files and the bundle together: both count.
    local size_kib tracked_kib
    size_kib="$(du -sk "$bundle" | cut -f1)"
    tracked_kib="$(cd "$repo" && git ls-files -z 2>/dev/null | du -ck --files0-from=- 2>/dev/null | tail -n 1 | cut -f1)"
    tracked_kib="${tracked_kib:-0}"
    local total_kib=$((size_kib + tracked_kib))
    echo "gpu-check: bundle $bundle: $((size_kib / 1024)) MiB ($size_kib KiB): runtime $(du -k "$bundle/runtime.tar.xz" | cut -f1)" \
        "KiB, NIXL $(du -k "$bundle/nixl.tar.xz" | cut -f1) KiB, jars $(du -sk "$bundle/lib" "$bundle/junit" | awk '{s += $1} END {print s}') KiB;" \
        "tracked files $tracked_kib KiB; together $((total_kib / 1024)) MiB ($total_kib KiB);" \
        "target $target_bundle_mib MiB, limit $max_bundle_mib MiB (a device run carries 64 MiB); built in ${SECONDS} s"
    (( total_kib <= max_bundle_mib * 1024 )) || die "bundle and tracked files exceed $max_bundle_mib MiB"
    (( total_kib <= target_bundle_mib * 1024 )) \
        || echo "gpu-check: WARNING: bundle and tracked files exceed the $target_bundle_mib MiB target" >&2
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
