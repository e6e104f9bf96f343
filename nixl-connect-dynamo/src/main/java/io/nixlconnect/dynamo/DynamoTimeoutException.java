package io.nixlconnect.dynamo;

/**
 * Something the protocol waits for did not come within its configured time: the worker's acknowledgement, its call
 * home with the response stream, or the stream's next frame ({@link DynamoSettings}).
 */
public class DynamoTimeoutException extends DynamoException {

    private static final long serialVersionUID = 1L;

    public DynamoTimeoutException(String message) {
        super(message);
    }
}
