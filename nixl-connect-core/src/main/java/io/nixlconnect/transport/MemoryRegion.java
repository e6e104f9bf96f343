package io.nixlconnect.transport;

/**
 * A contiguous range of memory: in this process for local regions, in the peer's for remote ones.
 *
 * @param address  virtual address of the first byte
 * @param length   length in bytes, {@code >= 0}
 * @param type     memory type
 * @param deviceId GPU ordinal for {@link MemoryType#VRAM}, 0 for host memory
 */
public record MemoryRegion(long address, long length, MemoryType type, int deviceId) {

    public MemoryRegion {
        if (length < 0) {
            throw new IllegalArgumentException("length must be >= 0, was " + length);
        }
        if (type == null) {
            throw new IllegalArgumentException("type must not be null");
        }
        if (deviceId < 0) {
            throw new IllegalArgumentException("deviceId must be >= 0, was " + deviceId);
        }
    }

    /** Whether {@code [start, start + len)} lies entirely inside this region. */
    public boolean contains(long start, long len) {
        return len >= 0 && start >= address && start - address <= length - len;
    }
}
