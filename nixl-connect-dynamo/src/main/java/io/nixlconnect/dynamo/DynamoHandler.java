package io.nixlconnect.dynamo;

import java.util.function.Function;

/**
 * Serves an endpoint's requests, as a Python worker's async-generator handler does: send zero or more responses,
 * then return. Throwing sends the caller an error event with the exception's class and message (Dynamo's
 * {@code "ValueError: …"}), which its client raises. Runs on a runtime thread, at most
 * {@link DynamoSettings#maxConcurrentRequests()} at once; check {@link DynamoRequest#isStopped()} in long loops.
 */
@FunctionalInterface
public interface DynamoHandler {

    void handle(DynamoRequest request, DynamoResponder responder) throws Exception;

    /** A handler that answers each request with one response: {@code reply} applied to the request's payload. */
    static DynamoHandler unary(Function<Object, ?> reply) {
        return (request, responder) -> responder.send(reply.apply(request.payload()));
    }
}
