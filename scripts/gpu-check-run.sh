#!/usr/bin/env bash
# run.sh of the GPU check bundle (built by scripts/gpu-check.sh bundle; see there for the checks and exit
# statuses). Needs bash, tar and xz (or python3) on a Linux x86-64 machine with an NVIDIA GPU; nothing else.
set -uo pipefail

here="${BASH_SOURCE[0]%/*}"
[[ "$here" == "${BASH_SOURCE[0]}" ]] && here=.
here="$(cd "$here" && pwd)"
classpath="$here/lib/*"
launcher="$(ls "$here"/junit/junit-platform-console-standalone-*.jar 2>/dev/null | head -n 1)"
export NIXL_TEST_GPU_REQUIRED=1

EXIT_FAILED=1
EXIT_GPU_EXPECTED=3
EXIT_NO_BUNDLE=4
[[ -f "$here/runtime.tar.xz" && -n "$launcher" && -f "$here/nixl.tar.xz" ]] \
    || { echo "run.sh: incomplete bundle in $here" >&2; exit $EXIT_NO_BUNDLE; }
logs="${GPU_CHECK_LOGS:-$(mktemp -d "${TMPDIR:-/tmp}/nixl-connect-gpu-check.XXXXXX")}"
mkdir -p "$logs"

unpack() { # archive.tar.xz folder
    mkdir -p "$2"
    if command -v xz >/dev/null; then
        tar --extract --xz --file "$1" --directory "$2"
    else
        python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1], "r:xz").extractall(sys.argv[2])' "$1" "$2"
    fi
}
# The Java runtime and NIXL's libraries travel xz-compressed (the bundle must fit what a device run carries).
unpack "$here/runtime.tar.xz" "$logs/runtime" || { echo "run.sh: cannot unpack the Java runtime into $logs" >&2; exit $EXIT_NO_BUNDLE; }
java="$logs/runtime/bin/java"
"$java" -version >/dev/null 2>&1 || { echo "run.sh: the bundled Java runtime does not start" >&2; exit $EXIT_NO_BUNDLE; }

summary=()
failed=0
record() { # name verdict detail
    summary+=("CHECK $1: $2${3:+ ($3)}")
    echo "CHECK $1: $2${3:+ ($3)}"
    [[ "$2" == FAIL ]] && failed=1
    return 0
}
finish() {
    echo
    echo "==== summary (logs in $logs)"
    printf '%s\n' "${summary[@]}"
    exit "$1"
}

echo "==== environment"
cuda_driver=none
if command -v nvidia-smi >/dev/null; then
    nvidia-smi 2>&1 | head -n 20
    cuda_driver="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
else
    echo "nvidia-smi: not found"
fi
find_library() { # name -> path or empty
    local found
    found="$(ldconfig -p 2>/dev/null | awk -v lib="$1" '$1 == lib {print $NF; exit}')"
    if [[ -z "$found" ]]; then
        local dir
        IFS=: read -r -a dirs <<<"${LD_LIBRARY_PATH:-}"
        for dir in "${dirs[@]}" /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
            [[ -n "$dir" && -e "$dir/$1" ]] && { found="$dir/$1"; break; }
        done
    fi
    echo "$found"
}
libcuda="$(find_library libcuda.so.1)"
libcudart="$(find_library libcudart.so.12)"
cudart_note="not found: the CUDA memory hooks of UCX (libucm_cuda) will not load"
echo "driver: $cuda_driver; libcuda.so.1: ${libcuda:-not found}; libcudart.so.12: ${libcudart:-$cudart_note}"
"$java" -version 2>&1 | head -n 1
if [[ -n "$libcuda" ]]; then
    record environment PASS "driver $cuda_driver, libcuda ${libcuda}, libcudart ${libcudart:-missing}"
else
    record environment FAIL "no libcuda.so.1: no NVIDIA driver here"
fi

echo "==== NIXL"
nixl_root="$logs/nixl"
unpack "$here/nixl.tar.xz" "$nixl_root"
NIXL_LIBRARY_DIR="$(dirname "$(find "$nixl_root" -name libnixl_capi.so | head -n 1)")"
export NIXL_LIBRARY_DIR NIXL_PLUGIN_DIR="$NIXL_LIBRARY_DIR/plugins"
echo "NIXL unpacked: $NIXL_LIBRARY_DIR"

echo "==== gpu-check"
"$java" -cp "$classpath" io.nixlconnect.cuda.GpuCheck --size-mib 256 --iterations 10 2>&1 | tee "$logs/gpu-check.log"
status=${PIPESTATUS[0]}
case $status in
    0) record gpu-check PASS ;;
    "$EXIT_GPU_EXPECTED")
        record gpu-check FAIL "GPU expected, none usable: $(grep -m1 'GPU EXPECTED' "$logs/gpu-check.log" | sed 's/^.*CUDA is unavailable: //')"
        for check in junit-gpu nixl-vram context bandwidth; do record "$check" SKIP "no usable GPU"; done
        finish $EXIT_GPU_EXPECTED ;;
    *) record gpu-check FAIL "exit $status, see $logs/gpu-check.log" ;;
esac

junit() { # name log class...
    local name="$1" log="$2"; shift 2
    local -a select=()
    local class
    for class in "$@"; do select+=(--select-class "$class"); done
    "$java" -Dnixl.test.gpu.required=true -jar "$launcher" execute --disable-banner --disable-ansi-colors --details=tree \
        --class-path "$here/lib" --class-path "$(printf '%s:' "$here"/lib/*.jar)" "${select[@]}" >"$log" 2>&1
    local status=$?
    tail -n 40 "$log"
    local counts; counts="$(grep -oE '[0-9]+ tests (successful|failed|aborted)' "$log" | sed 's/ tests//' | paste -sd, - | sed 's/,/, /g')"
    # Aborted tests are the ones meant for machines without a GPU; with the GPU required, a GPU test fails.
    if [[ $status -eq 0 ]] && ! grep -qE '[1-9][0-9]* (tests|containers) failed' "$log"; then
        record "$name" PASS "$counts"
    else
        record "$name" FAIL "${counts:-exit $status}; see $log"
    fi
}

echo "==== junit-gpu"
junit junit-gpu "$logs/junit-gpu.log" io.nixlconnect.cuda.CudaMemoryGpuTest io.nixlconnect.GpuTransferTest \
    io.nixlconnect.cuda.CudaAvailabilityTest io.nixlconnect.cuda.GpuCheckTest io.nixlconnect.RegisteredCudaBufferTest

echo "==== nixl-vram (UCX_LOG_LEVEL=info)"
UCX_LOG_LEVEL=info junit nixl-vram "$logs/nixl-vram.log" io.nixlconnect.NixlGpuTransferTest
grep -E 'VRAM memory is detected as host|cuda|CUDA' "$logs/nixl-vram.log" | head -n 20

echo "==== context"
junit context "$logs/context.log" io.nixlconnect.cuda.CudaContextStackTest

echo "==== bandwidth"
"$java" -cp "$classpath" io.nixlconnect.GpuBandwidth --size-mib 64 --iterations 5 2>&1 | tee "$logs/bandwidth.log"
status=${PIPESTATUS[0]}
if [[ $status -eq 0 ]]; then
    record bandwidth PASS "$(grep -c '^BANDWIDTH [a-z]* *[RW]' "$logs/bandwidth.log") rows"
else
    record bandwidth FAIL "exit $status, see $logs/bandwidth.log"
fi

finish $(( failed ? EXIT_FAILED : 0 ))
