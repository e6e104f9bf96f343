package io.nixlconnect.transport;

import java.util.concurrent.CompletableFuture;

/** Regions exposed to peers for one passive operation, and the wait for its notification. */
public interface PassiveWindow extends AutoCloseable {

    /** Completes when the window's notification arrives; the window then closes itself. */
    CompletableFuture<Void> notified();

    /**
     * Makes the regions unreachable. When this returns no peer access to them is in progress, so the
     * caller may free the memory. Idempotent.
     */
    @Override
    void close();
}
