package io.nixlconnect;

import org.jspecify.annotations.Nullable;

/**
 * The operation's own time limit ran out, not the caller's wait: it exceeded
 * {@link ConnectorOptions#operationTimeout()} (reads and writes) or {@link ConnectorOptions#passiveTimeout()}
 * (readables and writables) and ended {@code ERRORED}; it is over and the transport no longer touches its buffers.
 * Thrown by every wait on it and carried as its {@link Operation#failure()}; a {@link TransferException} like any
 * other failed operation.
 *
 * <p>Its opposite is {@link WaitTimeoutException}: the {@code timeout} a caller passed to a wait ran out first, and
 * the operation goes on.
 */
public class TransferTimeoutException extends TransferException {

    private static final long serialVersionUID = 1L;

    public TransferTimeoutException(String message) {
        super(OperationStatus.ERRORED, message, null);
    }

    /** As {@link #TransferTimeoutException(String)}, with a cause: the same timeout thrown again in another thread. */
    public TransferTimeoutException(String message, @Nullable Throwable cause) {
        super(OperationStatus.ERRORED, message, cause);
    }
}
