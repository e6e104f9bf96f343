package io.nixlconnect;

/**
 * An operation exceeded its own time limit ({@link ConnectorOptions#operationTimeout()} for reads and writes,
 * {@link ConnectorOptions#passiveTimeout()} for readables and writables) and ended ERRORED: the transport no longer
 * touches its buffers. Thrown by its waits and carried as its {@link Operation#failure()}. A caller's wait that runs
 * out first is a {@link WaitTimeoutException} instead: that operation goes on.
 */
public class TransferTimeoutException extends TransferException {

    private static final long serialVersionUID = 1L;

    public TransferTimeoutException(String message) {
        super(OperationStatus.ERRORED, message, null);
    }
}
