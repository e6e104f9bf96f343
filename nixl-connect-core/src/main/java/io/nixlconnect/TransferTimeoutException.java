package io.nixlconnect;

/**
 * Time ran out: either an operation exceeded its timeout (it then ends ERRORED with this as the cause), or
 * a {@link AbstractOperation#waitForCompletion(java.time.Duration) wait} did (the operation goes on).
 */
public class TransferTimeoutException extends TransferException {

    private static final long serialVersionUID = 1L;

    public TransferTimeoutException(OperationStatus status, String message) {
        super(status, message, null);
    }
}
