package io.nixlconnect.dynamo;

/**
 * No instance to send the request to: discovery lists none for the endpoint (within the wait asked for), the instance
 * asked for by id is not listed, or the instance a call went to left discovery before it called home.
 */
public class DynamoInstanceUnavailableException extends DynamoException {

    private static final long serialVersionUID = 1L;

    public DynamoInstanceUnavailableException(String message) {
        super(message);
    }
}
