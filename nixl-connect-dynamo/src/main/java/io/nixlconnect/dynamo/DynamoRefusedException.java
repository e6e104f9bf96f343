package io.nixlconnect.dynamo;

/**
 * The worker refused the request when it arrived (its acknowledgement carried a reason instead of being empty): it is
 * at capacity ({@link #overloaded()}, Dynamo's {@code "Server overloaded: …"}), it does not serve the endpoint
 * ({@code "Server unavailable: …"}), or it could not read the request. Nothing ran; another instance may take it.
 */
public class DynamoRefusedException extends DynamoException {

    private static final long serialVersionUID = 1L;

    /** How an overloaded Dynamo worker's refusal starts. */
    public static final String OVERLOADED_PREFIX = "Server overloaded";
    /** How a Dynamo worker's refusal starts when it does not serve the endpoint. */
    public static final String UNAVAILABLE_PREFIX = "Server unavailable";

    private final String reason;

    public DynamoRefusedException(String message, String reason) {
        super(message);
        this.reason = reason;
    }

    /** The worker's refusal, as it sent it. */
    public String reason() {
        return reason;
    }

    /** Whether the worker refused because it was at capacity ({@value #OVERLOADED_PREFIX}: retry later or elsewhere). */
    public boolean overloaded() {
        return reason.startsWith(OVERLOADED_PREFIX);
    }
}
