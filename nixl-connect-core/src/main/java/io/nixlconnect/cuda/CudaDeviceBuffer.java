package io.nixlconnect.cuda;

import java.nio.ByteBuffer;
import java.nio.ReadOnlyBufferException;
import java.util.Objects;

/**
 * Memory on one CUDA device, allocated with {@code cuMemAlloc} in the device's primary context.
 * Usable from any thread. Copies are synchronous: the data has landed when they return.
 *
 * <p>Offsets are in bytes from {@link #address()}. ByteBuffer copies move {@code remaining()} bytes
 * and advance the buffer's position by that much, like {@code put}/{@code get}.
 */
public final class CudaDeviceBuffer implements CudaBuffer {

    private final CudaDriver driver;
    private final int deviceId;
    private final long address;
    private final long size;
    private final UseCounter uses = new UseCounter(this::toString);

    CudaDeviceBuffer(CudaDriver driver, int deviceId, long address, long size) {
        this.driver = driver;
        this.deviceId = deviceId;
        this.address = address;
        this.size = size;
    }

    /** The CUDA ordinal of the device holding the memory. */
    public int deviceId() {
        return deviceId;
    }

    @Override
    public long address() {
        return address;
    }

    @Override
    public long size() {
        return size;
    }

    // ---- host -> device ----

    /** Copies all of {@code source} to the device at {@code offset}. */
    public void copyFrom(byte[] source, long offset) {
        copyFrom(source, 0, source.length, offset);
    }

    /** Copies {@code source[sourceOffset, sourceOffset + length)} to the device at {@code offset}. */
    public void copyFrom(byte[] source, int sourceOffset, int length, long offset) {
        Objects.checkFromIndexSize(sourceOffset, length, source.length);
        Ranges.checkWithin(size, offset, length, toString());
        if (length == 0) {
            return;
        }
        uses.whileInUse(() ->
                driver.copyHostToDevice(deviceId, source, sourceOffset, length, address + offset));
    }

    /** Copies {@code source.remaining()} bytes to the device at {@code offset}; advances the source. */
    public void copyFrom(ByteBuffer source, long offset) {
        int length = source.remaining();
        Ranges.checkWithin(size, offset, length, toString());
        if (length == 0) {
            return;
        }
        uses.whileInUse(() -> {
            if (source.isDirect() || source.hasArray()) {
                driver.copyHostToDevice(deviceId, source, address + offset);
            } else {
                // A read-only heap buffer hides its array; go through a copy.
                byte[] copy = new byte[length];
                source.duplicate().get(copy);
                driver.copyHostToDevice(deviceId, copy, 0, length, address + offset);
            }
        });
        source.position(source.position() + length);
    }

    /** Copies {@code bytes} from native host memory at {@code hostAddress} to the device at {@code offset}. */
    public void copyFromHost(long hostAddress, long offset, long bytes) {
        Ranges.checkWithin(size, offset, bytes, toString());
        if (bytes == 0) {
            return;
        }
        Ranges.checkAddress("host", hostAddress);
        uses.whileInUse(() -> driver.copyHostToDevice(deviceId, hostAddress, address + offset, bytes));
    }

    /** Copies all of a pinned host buffer to the device at {@code offset}. */
    public void copyFrom(PinnedHostBuffer source, long offset) {
        source.uses().whileInUse(() -> copyFromHost(source.address(), offset, source.size()));
    }

    // ---- device -> host ----

    /** Fills all of {@code destination} from the device at {@code offset}. */
    public void copyTo(long offset, byte[] destination) {
        copyTo(offset, destination, 0, destination.length);
    }

    /** Fills {@code destination[destinationOffset, destinationOffset + length)} from the device at {@code offset}. */
    public void copyTo(long offset, byte[] destination, int destinationOffset, int length) {
        Objects.checkFromIndexSize(destinationOffset, length, destination.length);
        Ranges.checkWithin(size, offset, length, toString());
        if (length == 0) {
            return;
        }
        uses.whileInUse(() ->
                driver.copyDeviceToHost(deviceId, address + offset, destination, destinationOffset, length));
    }

    /** Fills {@code destination.remaining()} bytes from the device at {@code offset}; advances the destination. */
    public void copyTo(long offset, ByteBuffer destination) {
        if (destination.isReadOnly()) {
            throw new ReadOnlyBufferException();
        }
        int length = destination.remaining();
        Ranges.checkWithin(size, offset, length, toString());
        if (length == 0) {
            return;
        }
        uses.whileInUse(() -> driver.copyDeviceToHost(deviceId, address + offset, destination));
        destination.position(destination.position() + length);
    }

    /** Copies {@code bytes} from the device at {@code offset} to native host memory at {@code hostAddress}. */
    public void copyToHost(long offset, long hostAddress, long bytes) {
        Ranges.checkWithin(size, offset, bytes, toString());
        if (bytes == 0) {
            return;
        }
        Ranges.checkAddress("host", hostAddress);
        uses.whileInUse(() -> driver.copyDeviceToHost(deviceId, address + offset, hostAddress, bytes));
    }

    /** Fills all of a pinned host buffer from the device at {@code offset}. */
    public void copyTo(long offset, PinnedHostBuffer destination) {
        destination.uses().whileInUse(() -> copyToHost(offset, destination.address(), destination.size()));
    }

    // ---- device -> device ----

    /**
     * Copies {@code bytes} from {@code source} at {@code sourceOffset} to this buffer at {@code offset};
     * the source may live on another device.
     */
    public void copyFrom(CudaDeviceBuffer source, long sourceOffset, long offset, long bytes) {
        Ranges.checkWithin(source.size, sourceOffset, bytes, source.toString());
        Ranges.checkWithin(size, offset, bytes, toString());
        if (bytes == 0) {
            return;
        }
        source.uses.whileInUse(() -> uses.whileInUse(() ->
                driver.copyDeviceToDevice(deviceId, source.address + sourceOffset, address + offset, bytes)));
    }

    // ---- lifecycle ----

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

    /** Frees the device memory; idempotent; refused while in use. */
    @Override
    public void close() {
        if (uses.close()) {
            driver.freeDevice(deviceId, address);
        }
    }

    @Override
    public String toString() {
        return "CUDA buffer of " + size + " bytes at 0x" + Long.toHexString(address) + " on cuda:" + deviceId;
    }
}
