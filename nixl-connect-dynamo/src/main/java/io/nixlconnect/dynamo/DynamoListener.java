package io.nixlconnect.dynamo;

import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * Told when each call and each served request starts and ends, per endpoint, with the request's id to pair the two:
 * what metrics and observations are made of ({@link DynamoRuntime#addListener}). A served request's
 * {@link #requestStarted} and {@link #requestEnded} run on the handler's own thread, before and after it (a tracing
 * scope opened in one can be closed in the other); a call's {@link #callStarted} runs on the calling thread and its
 * {@link #callEnded} on whichever thread ends the stream. Keep them short and do not throw: what a listener throws is
 * logged and dropped.
 */
public interface DynamoListener {

    /** A call of this runtime is about to be sent. */
    default void callStarted(EndpointId endpoint, String requestId) {
    }

    /**
     * A call of this runtime ended: its stream complete (or stopped and drained), or failed, or killed, or the call
     * failed before it had a stream.
     *
     * @param elapsed from {@link #callStarted} to the stream's end
     * @param failure null when the stream ended normally; {@link DynamoCancelledException} when this side killed it
     */
    default void callEnded(EndpointId endpoint, String requestId, Duration elapsed, @Nullable DynamoException failure) {
    }

    /** A request to one of this runtime's endpoints was accepted and its handler is about to run. */
    default void requestStarted(EndpointId endpoint, String requestId) {
    }

    /**
     * A request to one of this runtime's endpoints ended.
     *
     * @param elapsed from {@link #requestStarted} to its stream's end
     * @param failure what the handler threw (its caller got an error event), a {@link DynamoCancelledException} when
     *                the caller killed the request or went away, or another {@link DynamoException} when its caller
     *                could not be reached or its payload not decoded; null when it ended normally
     */
    default void requestEnded(EndpointId endpoint, String requestId, Duration elapsed, @Nullable Throwable failure) {
    }

    /**
     * A request to one of this runtime's endpoints was refused when it arrived (for example {@code "Server
     * overloaded: worker at capacity"}); {@code requestId} is null when the request could not be read far enough.
     */
    default void requestRefused(EndpointId endpoint, @Nullable String requestId, String reason) {
    }
}
