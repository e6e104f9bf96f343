package io.nixlconnect;

/** An operation ended without completing: it errored or was cancelled. {@link #status()} says which. */
public class TransferException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final OperationStatus status;

    public TransferException(OperationStatus status, String message, Throwable cause) {
        super(message, cause);
        this.status = status;
    }

    /** {@link OperationStatus#ERRORED} or {@link OperationStatus#CANCELLED}; {@code IN_PROGRESS} for a wait that timed out. */
    public OperationStatus status() {
        return status;
    }
}
