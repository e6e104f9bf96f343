package io.nixlconnect;

import org.jspecify.annotations.Nullable;

/** An operation ended without completing: it errored or was cancelled. {@link #status()} says which. */
public class TransferException extends NixlConnectException {

    private static final long serialVersionUID = 1L;

    private final OperationStatus status;

    public TransferException(OperationStatus status, String message, @Nullable Throwable cause) {
        super(message, cause);
        this.status = status;
    }

    /**
     * {@link OperationStatus#ERRORED} or {@link OperationStatus#CANCELLED}; for a wait interrupted before the
     * operation ended, its status at that moment.
     */
    public OperationStatus status() {
        return status;
    }
}
