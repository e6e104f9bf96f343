package io.nixlconnect.dynamo;

import org.jspecify.annotations.Nullable;

/**
 * The worker's handler failed: an error prologue (the worker could not start the stream) or an error event in the
 * stream (the handler raised). {@link #workerMessage()} is the worker's own message; {@link #errorClass()} Dynamo's
 * error class where the worker sent one (for example {@code "InvalidRequest"}).
 */
public class DynamoWorkerException extends DynamoException {

    private static final long serialVersionUID = 1L;

    private final String workerMessage;
    private final @Nullable String errorClass;

    public DynamoWorkerException(String message, String workerMessage, @Nullable String errorClass) {
        super(message);
        this.workerMessage = workerMessage;
        this.errorClass = errorClass;
    }

    /** The worker's message, as it sent it. */
    public String workerMessage() {
        return workerMessage;
    }

    /** Dynamo's error class ({@code "class"} of the error event), or null when the worker sent none. */
    public @Nullable String errorClass() {
        return errorClass;
    }
}
