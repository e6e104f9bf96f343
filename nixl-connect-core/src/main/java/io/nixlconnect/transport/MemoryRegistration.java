package io.nixlconnect.transport;

/** A live registration of a local memory region. Closing it deregisters the memory. Idempotent. */
public interface MemoryRegistration extends AutoCloseable {

    MemoryRegion region();

    @Override
    void close();
}
