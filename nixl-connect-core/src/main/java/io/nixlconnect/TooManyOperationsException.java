package io.nixlconnect;

/**
 * The connector is at capacity: {@link ConnectorOptions#maxInFlightOperations()} operations are in flight, so a
 * new one is refused at once. Retry once some have ended (a web application may answer 503).
 */
public class TooManyOperationsException extends NixlConnectException {

    private static final long serialVersionUID = 1L;

    private final int limit;

    public TooManyOperationsException(String message, int limit) {
        super(message);
        this.limit = limit;
    }

    /** The limit that was reached. */
    public int limit() {
        return limit;
    }
}
