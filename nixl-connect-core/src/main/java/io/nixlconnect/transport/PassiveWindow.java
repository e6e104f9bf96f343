package io.nixlconnect.transport;

import java.util.concurrent.CompletableFuture;

/** Regions exposed to peers for one passive operation, and the wait for its notification. */
public interface PassiveWindow extends AutoCloseable {

    /** Completes when the window's last expected notification arrives; the window then closes itself. */
    CompletableFuture<Void> notified();

    /** How many of the expected notifications have arrived so far. */
    int notificationsReceived();

    /**
     * Makes the regions unreachable. When this returns no peer access to them is in progress, so the
     * caller may free the memory. Idempotent.
     */
    @Override
    void close();
}
