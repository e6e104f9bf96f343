package io.nixlconnect.transport;

import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

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
     * Calls {@code listener} once when the transfer ends (at once if it has), with what {@link #completion()}
     * completes with. The connector registers one listener per transfer; a backend may refuse a second
     * ({@link IllegalStateException}). Default: through {@link #completion()}; a backend that calls it directly spares
     * the stages.
     */
    default void onEnd(EndListener listener) {
        completion().whenComplete((ignored, failure) -> listener.ended(failure));
    }

    /**
     * How the bytes moved: {@code "tcp"} or {@code "cross-memory-attach"} (embedded), {@code "nixl"};
     * null until the transfer has chosen.
     */
    default @Nullable String path() {
        return null;
    }

    /**
     * What the backend says about how it moved the bytes — which path it chose, and its own timings where it
     * measures them — complete once the transfer has ended; null where it says nothing (the operation then reports
     * only its transport's name).
     */
    default @Nullable TransferAttributes attributes() {
        return null;
    }

    /**
     * Called by a thread about to block until this transfer ends: a backend that has not started the transfer on a
     * thread of its own yet may run it on the calling thread instead, which saves two thread hand-offs (waking a
     * transport thread, and that thread waking the caller). Returns once the transfer has ended, or at once when the
     * backend leaves it to its own threads. Default: nothing.
     */
    default void runOnWaitingThread() {
    }

    /**
     * Stops the transfer and releases its resources. When this returns, the backend no longer touches
     * the local memory of the transfer. Does nothing once the transfer has ended.
     */
    void cancel();
}
