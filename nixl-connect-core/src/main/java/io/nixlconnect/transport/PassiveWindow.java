package io.nixlconnect.transport;

import java.util.concurrent.CompletableFuture;

/** Regions exposed to peers for one passive operation, and the wait for its notification. */
public interface PassiveWindow extends AutoCloseable {

    /** Completes when the window's notification arrives; the window then closes itself. */
    CompletableFuture<Void> notified();

    /**
     * How a peer last reached the regions: {@code "tcp"} or {@code "cross-memory-attach"} (embedded),
     * {@code "nixl"}; null while no peer has.
     */
    default String path() {
        return null;
    }

    /**
     * Makes the regions unreachable. When this returns no peer access to them is in progress, so the
     * caller may free the memory. Idempotent.
     */
    @Override
    void close();
}
