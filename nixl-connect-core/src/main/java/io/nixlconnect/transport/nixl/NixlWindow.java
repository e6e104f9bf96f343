package io.nixlconnect.transport.nixl;

import io.nixlconnect.transport.PassiveWindow;

import java.util.concurrent.CompletableFuture;

/**
 * A passive window on a NIXL agent. NIXL exposes every registered region to every loaded peer, so
 * the window only waits for its notification; closing it stops the wait.
 */
final class NixlWindow implements PassiveWindow {

    private final NotificationDispatcher dispatcher;
    private final NotificationDispatcher.Waiter waiter;

    NixlWindow(NotificationDispatcher dispatcher, NotificationDispatcher.Waiter waiter) {
        this.dispatcher = dispatcher;
        this.waiter = waiter;
    }

    @Override
    public CompletableFuture<Void> notified() {
        return waiter.future;
    }

    @Override
    public int notificationsReceived() {
        return dispatcher.received(waiter);
    }

    @Override
    public void close() {
        if (!waiter.future.isDone()) {
            dispatcher.cancel(waiter);
        }
    }
}
