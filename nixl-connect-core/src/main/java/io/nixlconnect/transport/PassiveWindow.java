package io.nixlconnect.transport;

import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

/** Regions exposed to peers for one passive operation, and the wait for its notification. */
public interface PassiveWindow extends AutoCloseable {

    /** Completes when the window's last expected notification arrives; the window then closes itself. */
    CompletableFuture<Void> notified();

    /**
     * Calls {@code listener} once when {@link #notified()} completes (at once if it has), with what it completes
     * with. The connector registers one listener per window; a backend may refuse a second ({@link
     * IllegalStateException}). Default: through {@link #notified()}; a backend that calls it directly spares the
     * stages.
     */
    default void onNotified(EndListener listener) {
        notified().whenComplete((ignored, failure) -> listener.ended(failure));
    }

    /** How many of the expected notifications have arrived so far. */
    int notificationsReceived();

    /**
     * How a peer last reached the regions: {@code "tcp"} or {@code "cross-memory-attach"} (embedded),
     * {@code "nixl"}; null while no peer has.
     */
    default @Nullable String path() {
        return null;
    }

    /**
     * Ends the window: stops waiting for its notification and makes the regions unreachable for new
     * accesses. A peer access already in progress may go on until {@link #released()} completes.
     * Idempotent. NIXL's never blocks; the embedded transport's waits (at most 30 s) for its server threads to
     * leave the window and for a peer granted a same-host copy to report, as such a copy cannot be cut off.
     */
    @Override
    void close();

    /**
     * Completes once no peer access to the regions can be in progress any more, so the caller may
     * deregister and free the memory. Completed when {@link #close()} returns for backends that revoke
     * access on close (the embedded transport, whose server stops serving the window). NIXL cannot
     * revoke a read already in flight over UCX's software RMA (TCP): its window completes this when the
     * peer's notification arrives (the peer's transfer is over), when the agent is destroyed, or when a
     * drain limit scaled to the window's size has passed. Never completes exceptionally.
     */
    default CompletableFuture<Void> released() {
        return CompletableFuture.completedFuture(null);
    }

    /**
     * Whether {@link #released()} completed at the drain limit, without the peer's notification. A peer that
     * stalled on purpose may then still reach the memory (UCX over TCP serves any address it is asked for),
     * so memory the caller would free must be handed to {@link #keepUntilAgentCloses} instead.
     */
    default boolean releasedWithoutNotification() {
        return false;
    }

    /**
     * Holds {@code memory} (or whatever keeps it allocated) until the agent is destroyed and no peer can
     * reach it any more, then closes it; closes it at once if the agent already is.
     */
    default void keepUntilAgentCloses(AutoCloseable memory) {
        try {
            memory.close();
        } catch (Exception e) {
            throw new IllegalStateException("Freeing memory kept for a window failed", e);
        }
    }

    /**
     * As {@link #keepUntilAgentCloses(AutoCloseable)}, saying how much memory this keeps resident that its owner
     * would otherwise have freed now ({@code residentBytes}; 0 for what only keeps memory in use reachable, or memory
     * whose pages were given back to the system first): the transport caps and reports it.
     */
    default void keepUntilAgentCloses(AutoCloseable memory, long residentBytes) {
        keepUntilAgentCloses(memory);
    }
}
