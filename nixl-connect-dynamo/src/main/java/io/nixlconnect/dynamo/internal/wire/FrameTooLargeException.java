package io.nixlconnect.dynamo.internal.wire;

import io.nixlconnect.dynamo.DynamoProtocolException;

/** A frame's lengths announce more than the configured limit; nothing of it was allocated. */
public final class FrameTooLargeException extends DynamoProtocolException {

    private static final long serialVersionUID = 1L;

    private final long size;
    private final long limit;

    public FrameTooLargeException(String what, long size, long limit) {
        super(what + " of " + Long.toUnsignedString(size) + " bytes is larger than the limit of " + limit
                + " bytes (maxMessageSize, DYN_TCP_MAX_MESSAGE_SIZE)");
        this.size = size;
        this.limit = limit;
    }

    /** The size announced (unsigned). */
    public String size() {
        return Long.toUnsignedString(size);
    }

    public long limit() {
        return limit;
    }
}
