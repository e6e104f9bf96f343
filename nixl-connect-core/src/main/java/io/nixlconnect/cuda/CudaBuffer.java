package io.nixlconnect.cuda;

/**
 * Memory allocated through the CUDA driver: a device buffer or a pinned host buffer.
 *
 * <p>{@link #close()} frees the memory; it is idempotent, and it refuses (with
 * {@link IllegalStateException}) while the buffer is in use, so that memory registered in a live
 * transfer is never freed underneath it. Copies mark the buffer in use for their duration, and a
 * connector registering the buffer's memory in an operation holds a {@link LiveUse} until the
 * operation ends.
 */
public sealed interface CudaBuffer extends AutoCloseable permits CudaDeviceBuffer, PinnedHostBuffer {

    /** The address of the first byte: a device pointer for device buffers, a host address for pinned ones. */
    long address();

    /** The size in bytes. */
    long size();

    /** Whether {@link #close()} has freed the memory. */
    boolean isClosed();

    /**
     * Marks the buffer as in use until the returned handle is closed; meanwhile {@link #close()} throws.
     *
     * @throws IllegalStateException if the buffer is already closed
     */
    LiveUse acquireUse();

    /** How many uses are live now. */
    int liveUses();

    /**
     * Frees the memory; does nothing if already closed.
     *
     * @throws IllegalStateException if the buffer is still in use (still registered in a live operation)
     */
    @Override
    void close();
}
