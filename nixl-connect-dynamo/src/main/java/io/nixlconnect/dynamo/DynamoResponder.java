package io.nixlconnect.dynamo;

import org.jspecify.annotations.Nullable;

/** Sends a request's responses to its caller, in order. Blocks while the caller is not reading (backpressure). */
public interface DynamoResponder {

    /**
     * Sends one response.
     *
     * @throws DynamoCancelledException if the caller killed the request or went away
     * @throws IllegalArgumentException if the value is not made of payload values, or encodes larger than
     *                                  {@link DynamoSettings#maxMessageSize()}
     */
    void send(@Nullable Object data);

    /** Sends one response with Dynamo's {@code Annotated} envelope fields. */
    void send(DynamoResponse response);
}
