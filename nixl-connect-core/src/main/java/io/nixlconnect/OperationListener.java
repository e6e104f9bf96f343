package io.nixlconnect;

/**
 * Observes operations of a {@link Connector} (metrics, tracing). Called on the thread that starts or ends
 * the operation: keep it quick and never block. Exceptions are logged and ignored.
 */
public interface OperationListener {

    /** An operation was created and (for active ones) posted. */
    default void operationStarted(Operation operation) {
    }

    /** An operation reached a terminal status; {@link Operation#status()} says which. */
    default void operationFinished(Operation operation) {
    }
}
