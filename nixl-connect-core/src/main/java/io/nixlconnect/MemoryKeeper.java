package io.nixlconnect;

/**
 * Where memory goes that a stalled peer may still reach (see {@link io.nixlconnect.transport.PassiveWindow#keepUntilAgentCloses}):
 * the transport keeps it until its agent is destroyed.
 */
@FunctionalInterface
interface MemoryKeeper {

    /** Keeps {@code memory}, which holds {@code residentBytes} its owner would otherwise have freed now. */
    void keep(AutoCloseable memory, long residentBytes);
}
