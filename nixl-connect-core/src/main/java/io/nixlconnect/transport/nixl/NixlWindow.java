package io.nixlconnect.transport.nixl;

import io.nixlconnect.transport.PassiveWindow;
import io.nixlconnect.transport.TransportException;

import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;

/**
 * A passive window on a NIXL agent. NIXL exposes every registered region to every loaded peer, so
 * the window only waits for its notification.
 *
 * <p>Closing it before the notification cannot revoke a peer's read or write already in flight: over
 * UCX's software RMA (TCP) the owner's worker serves a peer's GET or PUT from the raw address, in
 * fragments, whenever it progresses, whether or not the memory is still registered. So a window closed
 * early keeps awaiting its notification and {@link #released()} completes only when the notification
 * arrives (the peer's transfer is over), the agent is destroyed, or the agent's drain limit passes
 * ({@link NixlAgentCore#drain}). In the last case a peer that stalled on purpose could still reach the
 * memory, so the memory is not freed but kept until the agent is destroyed ({@link #keepUntilAgentCloses}).
 */
final class NixlWindow implements PassiveWindow, NotificationDispatcher.FailureListener {

    private final NixlAgentCore core;
    private final NotificationDispatcher.Waiter waiter;
    private final long bytes;
    private final CompletableFuture<Void> notified = new CompletableFuture<>();
    private final CompletableFuture<Void> released = new CompletableFuture<>();
    private boolean closed;
    private volatile boolean releasedWithoutNotification;

    NixlWindow(NixlAgentCore core, NotificationDispatcher.Waiter waiter, long bytes) {
        this.core = core;
        this.waiter = waiter;
        this.bytes = bytes;
        waiter.future.whenComplete((ok, error) -> {
            if (error == null) {
                notified.complete(null);
            } else {
                notified.completeExceptionally(error);
            }
        });
        waiter.onPeerFailure = this;
    }

    /**
     * The peer reported that its transfer ended without notifying ({@link FailureNotification}): the window ends
     * failed now. The waiter keeps waiting: the report is the peer's word, not proof that nothing of its transfer is
     * still in flight, so closing the window drains it as any early close does ({@link NixlAgentCore#drain}).
     */
    @Override
    public void peerFailed(String peer, String cause) {
        notified.completeExceptionally(new TransportException("the peer '" + peer + "' reported that its transfer "
                + "ended without notifying: " + cause));
    }

    @Override
    public CompletableFuture<Void> notified() {
        return notified;
    }

    @Override
    public CompletableFuture<Void> released() {
        return released;
    }

    NotificationDispatcher.Waiter waiter() {
        return waiter;
    }

    long bytes() {
        return bytes;
    }

    /** No peer can touch the window's regions any more. */
    void markReleased() {
        released.complete(null);
    }

    /** The drain limit passed without the notification: a stalled peer may still reach the memory. */
    void markReleasedWithoutNotification() {
        releasedWithoutNotification = true;
        released.complete(null);
    }

    @Override
    public boolean releasedWithoutNotification() {
        return releasedWithoutNotification;
    }

    @Override
    public void keepUntilAgentCloses(AutoCloseable memory) {
        keepUntilAgentCloses(memory, 0);
    }

    @Override
    public void keepUntilAgentCloses(AutoCloseable memory, long residentBytes) {
        core.keepUntilClosed(memory, 0, residentBytes); // the window's bytes were counted at its drain limit
    }

    /** NIXL (UCX) picks the path itself; what this side sees is that the notification came through NIXL. */
    @Override
    public String path() {
        return waiter.future.isDone() && !waiter.future.isCompletedExceptionally() ? "nixl" : null;
    }

    @Override
    public int notificationsReceived() {
        return core.notificationsReceived(waiter);
    }

    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        if (waiter.future.isDone()) {
            // Notified (the peer's transfer is over) or failed by the agent's close: nothing in flight.
            markReleased();
            return;
        }
        notified.completeExceptionally(new CancellationException("window closed before its notification"));
        core.drain(this);
    }
}
