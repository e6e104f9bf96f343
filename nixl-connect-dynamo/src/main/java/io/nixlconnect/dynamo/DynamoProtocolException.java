package io.nixlconnect.dynamo;

import org.jspecify.annotations.Nullable;

/**
 * A peer sent something this runtime does not understand: a frame larger than the configured limit, a truncated or
 * malformed frame, a payload that is not valid JSON or msgpack, an unknown message kind, or a protocol this runtime
 * does not speak. The message names the problem and, where the peer may simply speak another version, the version
 * spoken here ({@link DynamoRuntime#SUPPORTED_VERSION}).
 */
public class DynamoProtocolException extends DynamoException {

    private static final long serialVersionUID = 1L;

    public DynamoProtocolException(String message) {
        super(message);
    }

    public DynamoProtocolException(String message, @Nullable Throwable cause) {
        super(message, cause);
    }
}
