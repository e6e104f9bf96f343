package io.nixlconnect.transport;

import java.util.Map;
import java.util.concurrent.CompletableFuture;

/** A posted transfer. */
public interface TransferHandle {

    /** Current state. */
    TransferState state();

    /**
     * Completes normally when the data has landed and the notification was delivered; exceptionally
     * with a {@link TransportException} on error. Never completes for a cancelled transfer's caller in
     * any other way than exceptionally.
     */
    CompletableFuture<Void> completion();

    /**
     * How the bytes moved: {@code "tcp"} or {@code "cross-memory-attach"} (embedded), {@code "nixl"};
     * null until the transfer has chosen.
     */
    default String path() {
        return null;
    }

    /**
     * What the backend says about how it moved the bytes — which transport and path it chose, and its own timings
     * where it measures them — complete once the transfer has ended. Keys are the backend's; never null.
     */
    default Map<String, Object> attributes() {
        return Map.of();
    }

    /**
     * Stops the transfer and releases its resources. When this returns, the backend no longer touches
     * the local memory of the transfer. Does nothing once the transfer has ended.
     */
    void cancel();
}
