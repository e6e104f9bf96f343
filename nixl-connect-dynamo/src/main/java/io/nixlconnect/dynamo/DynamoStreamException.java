package io.nixlconnect.dynamo;

import org.jspecify.annotations.Nullable;

/**
 * The connection to the worker broke: it could not be opened, or it closed (the worker died, or its host went away)
 * before the stream was complete. Some responses may have arrived; the rest never will.
 */
public class DynamoStreamException extends DynamoException {

    private static final long serialVersionUID = 1L;

    public DynamoStreamException(String message, @Nullable Throwable cause) {
        super(message, cause);
    }
}
