package io.nixlconnect.transport;

/** A transport failed or refused a request. The message says what and why. */
public class TransportException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    public TransportException(String message) {
        super(message);
    }

    public TransportException(String message, Throwable cause) {
        super(message, cause);
    }
}
