package io.nixlconnect.cuda;

import io.nixlconnect.internal.NativeMemory;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Page-locked host memory, portable (pinned for every device's context): the staging area for fast
 * host/device copies. Usable from any thread.
 *
 * <p>Views from {@link #byteBuffer()} must not be touched after {@link #close()}: the JVM cannot
 * revoke them.
 */
public final class PinnedHostBuffer implements CudaBuffer {

    private final CudaDriver driver;
    private final long address;
    private final long size;
    private final UseCounter uses = new UseCounter(this::toString);

    PinnedHostBuffer(CudaDriver driver, long address, long size) {
        this.driver = driver;
        this.address = address;
        this.size = size;
    }

    @Override
    public long address() {
        return address;
    }

    @Override
    public long size() {
        return size;
    }

    /** Whether {@link #byteBuffer()} can view the whole buffer: at most {@link Integer#MAX_VALUE} bytes. */
    public boolean hasByteBuffer() {
        return size <= Integer.MAX_VALUE;
    }

    /**
     * A new direct, native-order view of the whole buffer (position 0, limit {@link #size()}).
     *
     * @throws UnsupportedOperationException if the buffer is larger than a ByteBuffer can be
     * @throws IllegalStateException         if the buffer is closed
     */
    public ByteBuffer byteBuffer() {
        if (!hasByteBuffer()) {
            throw new UnsupportedOperationException(this + " is too large for a ByteBuffer view ("
                    + Integer.MAX_VALUE + " bytes at most); use address()");
        }
        if (uses.isClosed()) {
            throw new IllegalStateException(this + " is closed");
        }
        // A JNA view rather than JCuda's: JCuda hands one out only on the allocating pointer object.
        return NativeMemory.view(address, (int) size).order(ByteOrder.nativeOrder());
    }

    UseCounter uses() {
        return uses;
    }

    @Override
    public LiveUse acquireUse() {
        return uses.acquireUse();
    }

    @Override
    public int liveUses() {
        return uses.liveUses();
    }

    @Override
    public boolean isClosed() {
        return uses.isClosed();
    }

    /** Frees the pinned memory; idempotent; refused while in use. */
    @Override
    public void close() {
        if (uses.close()) {
            driver.freePinned(address, size);
        }
    }

    @Override
    public String toString() {
        return "pinned host buffer of " + size + " bytes at 0x" + Long.toHexString(address);
    }
}
