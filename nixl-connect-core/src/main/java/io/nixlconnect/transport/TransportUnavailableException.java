package io.nixlconnect.transport;

/**
 * A backend cannot be used on this machine at all (its native library is missing, a stub or too old), as
 * opposed to failing to start. A connector then tries the next transport of its preference list.
 */
public class TransportUnavailableException extends TransportException {

    private static final long serialVersionUID = 1L;

    public TransportUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }
}
