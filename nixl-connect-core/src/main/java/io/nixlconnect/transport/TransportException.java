package io.nixlconnect.transport;

import io.nixlconnect.NixlConnectException;
import org.jspecify.annotations.Nullable;

/**
 * A transport failed or refused a request. The message says what and why. A {@link NixlConnectException}: a
 * backend's failure reaches the caller as it is, as an operation's {@code failure()}, from {@code new Connector(...)}
 * when a transport fails to start, or from a registration the backend refuses.
 */
public class TransportException extends NixlConnectException {

    private static final long serialVersionUID = 1L;

    public TransportException(String message) {
        super(message);
    }

    public TransportException(String message, @Nullable Throwable cause) {
        super(message, cause);
    }
}
