package io.nixlconnect;

import org.jspecify.annotations.Nullable;

/**
 * The root of every exception this library throws or reports, so that an application can catch all of them in one
 * place: the API's own ({@link TransferException}, {@link InvalidMetadataException}, ...), CUDA's
 * ({@code io.nixlconnect.cuda}) and the transport SPI's ({@code io.nixlconnect.transport.TransportException}, which
 * a backend raises when it fails or refuses a request; the connector hands it to a caller only as the cause of an
 * exception of the API, {@link TransportFailureException} or {@link TransferException}, or as an operation's
 * {@link Operation#failure()}). Only the caller's own
 * mistakes are the JDK's exceptions: an invalid argument ({@link IllegalArgumentException}), a {@code null} where
 * none is allowed ({@link NullPointerException}), or a call in the wrong state ({@link IllegalStateException}).
 *
 * <p>This class depends on nothing else in the library, so the SPI and {@code io.nixlconnect.cuda}, which stand
 * below the API, can extend it.
 */
public class NixlConnectException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    public NixlConnectException(String message) {
        super(message);
    }

    public NixlConnectException(String message, @Nullable Throwable cause) {
        super(message, cause);
    }
}
