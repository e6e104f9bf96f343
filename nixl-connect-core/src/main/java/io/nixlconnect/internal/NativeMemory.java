package io.nixlconnect.internal;

import com.sun.jna.Memory;
import com.sun.jna.Native;
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

    public static void copyIn(byte[] source, long address) {
        new Pointer(address).write(0, source, 0, source.length);
    }

    public static byte[] copyOut(long address, int length) {
        return new Pointer(address).getByteArray(0, length);
    }
}
