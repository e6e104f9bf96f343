package io.nixlconnect;

import io.nixlconnect.transport.TransportException;
import org.jspecify.annotations.Nullable;

/**
 * The connector's transport failed or refused what the connector asked of it: it could not start (a port taken),
 * would not register a buffer (memory it cannot move) or open a passive operation's window. The cause is the
 * transport's own report, a {@link TransportException} of the SPI, which never reaches a caller unwrapped.
 * A transfer that fails once it has started ends its operation instead: {@link Operation#failure()} says why and the
 * waits throw a {@link TransferException}.
 */
public class TransportFailureException extends NixlConnectException {

    private static final long serialVersionUID = 1L;

    private final String backend;

    public TransportFailureException(String backend, String message, @Nullable Throwable cause) {
        super(message, cause);
        this.backend = backend;
    }

    /** The transport that failed ({@code nixl}, {@code embedded}). */
    public String backend() {
        return backend;
    }

    /** {@code failure} with what the connector was doing, naming the transport. */
    static TransportFailureException of(String backend, String doing, TransportException failure) {
        return new TransportFailureException(backend, "The " + backend + " transport failed to " + doing + ": "
                + failure.getMessage(), failure);
    }
}
