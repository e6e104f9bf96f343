package io.nixlconnect.dynamo;

import io.nixlconnect.NixlConnectException;
import org.jspecify.annotations.Nullable;

/**
 * The root of every failure of the Dynamo runtime: a call refused or failed, a stream broken, a peer or discovery
 * entry that breaks the protocol, a timeout. Each kind is a subclass, and the message carries the worker's own words
 * where there are any. A {@link NixlConnectException}, so one {@code catch} covers this module and the core.
 */
public class DynamoException extends NixlConnectException {

    private static final long serialVersionUID = 1L;

    public DynamoException(String message) {
        super(message);
    }

    public DynamoException(String message, @Nullable Throwable cause) {
        super(message, cause);
    }
}
