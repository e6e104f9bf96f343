package io.nixlconnect;

/**
 * Where memory goes that a stalled peer may still reach (see {@link io.nixlconnect.transport.PassiveWindow#keepUntilAgentCloses}):
 * the transport keeps it until its agent is destroyed.
 */
@FunctionalInterface
interface MemoryKeeper {

    /** Keeps {@code memory}, of which {@code releasedBytes} were already given back to the operating system. */
    void keep(AutoCloseable memory, long releasedBytes);
}
