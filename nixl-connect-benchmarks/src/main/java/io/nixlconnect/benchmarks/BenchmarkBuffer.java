package io.nixlconnect.benchmarks;

import com.sun.jna.Native;
import com.sun.jna.Pointer;
import io.nixlconnect.Descriptor;

/**
 * A benchmark buffer of host memory, optionally eligible for transparent huge pages.
 *
 * <p>Why: numpy asks for huge pages on large arrays ({@code madvise(MADV_HUGEPAGE)}), malloc does not, and
 * with THP in "madvise" mode that alone changes cross-memory-attach copy speed by ~1.5x on one host. For a
 * like-for-like comparison with {@code benchmarks/nixl_direct.py}, both sides use the same kind of memory:
 * {@code -Dbench.hugepages=true|false} here, {@code NUMPY_MADVISE_HUGEPAGE=1|0} there.
 */
final class BenchmarkBuffer implements AutoCloseable {

    private static final long HUGE_PAGE = 2L << 20;
    private static final int MADV_HUGEPAGE = 14;

    static {
        Native.register(BenchmarkBuffer.class, "c");
    }

    private static native int posix_memalign(long[] memptr, long alignment, long size);

    private static native int madvise(long address, long length, int advice);

    private static native void free(long address);

    private final long memory;
    private final Descriptor descriptor;

    /** Allocates {@code size} bytes filled with {@code fill} (touched, so resident before timing). */
    BenchmarkBuffer(long size, boolean hugePages, byte fill) {
        long[] out = new long[1];
        int status = posix_memalign(out, HUGE_PAGE, Math.max(size, 1));
        if (status != 0) {
            throw new OutOfMemoryError("posix_memalign of " + size + " bytes failed: " + status);
        }
        memory = out[0];
        if (hugePages && size >= HUGE_PAGE) {
            madvise(memory, size, MADV_HUGEPAGE); // advice only: ignored where THP is off
        }
        new Pointer(memory).setMemory(0, size, fill);
        descriptor = new Descriptor(memory, size, "cpu", this);
    }

    static boolean hugePagesRequested() {
        return Boolean.parseBoolean(System.getProperty("bench.hugepages", "true"));
    }

    Descriptor descriptor() {
        return descriptor;
    }

    @Override
    public void close() {
        descriptor.close();
        free(memory);
    }
}
