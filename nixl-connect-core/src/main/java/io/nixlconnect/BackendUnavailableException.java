package io.nixlconnect;

/**
 * The transport backend a connector was configured for cannot be used here: for {@code backend = NIXL}, the
 * native library could not be found or loaded. The message says what was searched and what to set.
 */
public class BackendUnavailableException extends IllegalStateException {

    private static final long serialVersionUID = 1L;

    private final TransportBackend backend;

    public BackendUnavailableException(TransportBackend backend, String message, Throwable cause) {
        super(message, cause);
        this.backend = backend;
    }

    /** The backend that was asked for. */
    public TransportBackend backend() {
        return backend;
    }
}
