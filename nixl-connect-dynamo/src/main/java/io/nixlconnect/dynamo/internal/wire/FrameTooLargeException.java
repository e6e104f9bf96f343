package io.nixlconnect.dynamo.internal.wire;

import io.nixlconnect.dynamo.DynamoProtocolException;

/** A frame's lengths announce more than the configured limit; nothing of it was allocated. */
public final class FrameTooLargeException extends DynamoProtocolException {

    private static final long serialVersionUID = 1L;

    public FrameTooLargeException(String what, long size, long limit) {
        super(what + " of " + Long.toUnsignedString(size) + " bytes is larger than the limit of " + limit
                + " bytes (maxMessageSize, DYN_TCP_MAX_MESSAGE_SIZE)");
    }
}
