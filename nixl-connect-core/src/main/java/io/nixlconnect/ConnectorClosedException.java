package io.nixlconnect;

/** The connector is shutting down or closed: it accepts no new operations. */
public class ConnectorClosedException extends NixlConnectException {

    private static final long serialVersionUID = 1L;

    public ConnectorClosedException(String message) {
        super(message);
    }

    /** {@code cause}: what the close made fail (an operation that raced it). */
    public ConnectorClosedException(String message, Throwable cause) {
        super(message, cause);
    }
}
