package io.nixlconnect;

/**
 * The caller's own wait ran out, not the operation: the {@code timeout} passed to
 * {@link Operation#waitForCompletion(java.time.Duration)} (or {@code Connector.read/write(..., timeout)}) elapsed
 * first. The operation has <em>not</em> ended and goes on touching its buffers; wait again, or close it to stop it.
 * {@link #status()} is never terminal.
 *
 * <p>Its opposite is {@link TransferTimeoutException}: the operation's own time limit
 * ({@link ConnectorOptions#operationTimeout()}) ran out, so the operation ended {@code ERRORED} and is over. One
 * test tells them apart: {@code e instanceof TransferException} (only a TransferTimeoutException is one) means the
 * operation is over.
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
