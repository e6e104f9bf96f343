package io.nixlconnect;

/**
 * A caller's {@link Operation#waitForCompletion(java.time.Duration) wait} ran out: the caller gave up, the operation
 * has not ended and goes on (close it to stop it). Not to be confused with {@link TransferTimeoutException}, the
 * cause of an operation that ended ERRORED because it exceeded its own time limit.
 */
public class WaitTimeoutException extends NixlConnectException {

    private static final long serialVersionUID = 1L;

    private final OperationStatus status;

    public WaitTimeoutException(OperationStatus status, String message) {
        super(message);
        this.status = status;
    }

    /** The operation's status when the wait gave up: not terminal ({@code INITIALIZED} or {@code IN_PROGRESS}). */
    public OperationStatus status() {
        return status;
    }
}
