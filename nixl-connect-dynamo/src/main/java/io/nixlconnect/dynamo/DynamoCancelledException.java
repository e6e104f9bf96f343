package io.nixlconnect.dynamo;

/**
 * The stream was cancelled: on the caller's side, by {@link ResponseStream#kill()} or closing it; on the worker's, a
 * handler learns that its caller killed the stream when it sends another response.
 */
public class DynamoCancelledException extends DynamoException {

    private static final long serialVersionUID = 1L;

    public DynamoCancelledException(String message) {
        super(message);
    }
}
