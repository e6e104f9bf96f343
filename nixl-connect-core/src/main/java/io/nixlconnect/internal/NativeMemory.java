package io.nixlconnect.internal;

import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.Platform;
import com.sun.jna.Pointer;
import java.nio.ByteBuffer;

/** Raw host memory access through JNA: views over addresses, allocation, copies. */
public final class NativeMemory {

    /** Largest chunk a single {@link ByteBuffer} view covers. */
    public static final int MAX_VIEW = 1 << 30;

    private NativeMemory() {
    }

    /** A direct buffer viewing {@code length} bytes at {@code address}; no copy. */
    public static ByteBuffer view(long address, int length) {
        if (length == 0) {
            return ByteBuffer.allocateDirect(0);
        }
        return new Pointer(address).getByteBuffer(0, length);
    }

    /** The native address of a direct buffer's first byte (position 0). */
    public static long addressOf(ByteBuffer direct) {
        if (!direct.isDirect()) {
            throw new IllegalArgumentException("ByteBuffer must be direct (ByteBuffer.allocateDirect)");
        }
        return Pointer.nativeValue(Native.getDirectBufferPointer(direct));
    }

    /** Allocates {@code size} zeroed bytes of host memory (at least one byte, so the address is never 0). */
    public static Memory allocate(long size) {
        Memory memory = new Memory(Math.max(1, size));
        memory.clear();
        return memory;
    }

    /**
     * Gives the whole pages within {@code length} bytes at {@code address} back to the operating system while they
     * stay mapped ({@code madvise(MADV_DONTNEED)}: they read as zeros from then on, and take memory again only if
     * written). For memory that must stay addressable but whose bytes nobody needs: an allocation a stalled peer
     * could still ask UCX for. Returns the bytes released; 0 where this is not Linux or the call failed.
     */
    public static long releasePages(long address, long length) {
        if (!Platform.isLinux() || length <= 0) {
            return 0;
        }
        long page = Libc.PAGE_SIZE;
        long start = (address + page - 1) / page * page;
        long end = (address + length) / page * page;
        if (end <= start) {
            return 0;
        }
        return Libc.madvise(new Pointer(start), end - start, Libc.MADV_DONTNEED) == 0 ? end - start : 0;
    }

    /** The two libc calls {@link #releasePages} needs, bound directly. */
    private static final class Libc {
        static final int MADV_DONTNEED = 4;
        private static final int SC_PAGESIZE = 30;

        static {
            Native.register(Platform.C_LIBRARY_NAME);
        }

        static final long PAGE_SIZE = sysconf(SC_PAGESIZE);

        static native int madvise(Pointer address, long length, int advice);

        static native long sysconf(int name);
    }

    public static void copyIn(byte[] source, long address) {
        new Pointer(address).write(0, source, 0, source.length);
    }

    public static byte[] copyOut(long address, int length) {
        return new Pointer(address).getByteArray(0, length);
    }
}
