package io.nixlconnect;

import org.jspecify.annotations.Nullable;

/**
 * The transport a connector was configured for cannot be used here: for NIXL, the native library could not be
 * found or loaded. The message says what was searched and what to set.
 */
public class BackendUnavailableException extends NixlConnectException {

    private static final long serialVersionUID = 1L;

    private final String backend;

    public BackendUnavailableException(String backend, String message, @Nullable Throwable cause) {
        super(message, cause);
        this.backend = backend;
    }

    /** The name of the transport that was asked for ({@code nixl}, {@code embedded}). */
    public String backend() {
        return backend;
    }
}
