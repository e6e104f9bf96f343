package io.nixlconnect.transport;

import org.jspecify.annotations.Nullable;

/**
 * A backend cannot be used on this machine at all (its native library is missing, a stub or too old), as
 * opposed to failing to start. A connector then tries the next transport of its preference list.
 */
public class TransportUnavailableException extends TransportException {

    private static final long serialVersionUID = 1L;

    public TransportUnavailableException(String message, @Nullable Throwable cause) {
        super(message, cause);
    }
}
