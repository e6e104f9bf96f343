package io.nixlconnect.dynamo;

import org.jspecify.annotations.Nullable;

/** Discovery failed: its store (directory or etcd) cannot be read or written, or an endpoint cannot be registered. */
public class DynamoDiscoveryException extends DynamoException {

    private static final long serialVersionUID = 1L;

    public DynamoDiscoveryException(String message, @Nullable Throwable cause) {
        super(message, cause);
    }
}
