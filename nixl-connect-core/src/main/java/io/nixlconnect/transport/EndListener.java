package io.nixlconnect.transport;

import org.jspecify.annotations.Nullable;

/**
 * Told once that a {@link TransferHandle transfer} or a {@link PassiveWindow window} has ended: the connector's one
 * completion path from a transport to its operation. A backend that calls it directly spares the future stages
 * ({@code whenComplete}: a stage, a lambda and a dependent future) an operation would otherwise add.
 */
@FunctionalInterface
public interface EndListener {

    /**
     * Called once, on whichever thread ended the transfer or window (or on the registering thread when it had
     * ended already). Must not block.
     *
     * @param failure null when it succeeded (the data landed and the notification was delivered, or the window's
     *                notifications arrived); otherwise why not, as its future completes exceptionally with
     */
    void ended(@Nullable Throwable failure);
}
