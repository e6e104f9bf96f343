package io.nixlconnect;

/**
 * The base of this library's own exceptions, so that an application can catch all of them in one place. Bad
 * arguments and malformed metadata are {@link IllegalArgumentException}s instead ({@link InvalidMetadataException}).
 */
public class NixlConnectException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    public NixlConnectException(String message) {
        super(message);
    }

    public NixlConnectException(String message, Throwable cause) {
        super(message, cause);
    }
}
