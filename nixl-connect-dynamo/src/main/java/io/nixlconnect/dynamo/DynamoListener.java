package io.nixlconnect.dynamo;

import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * Told when each call and each served request ends, per endpoint: what metrics and observations are made of
 * ({@link DynamoRuntime#addListener}). Called on runtime threads, after the fact; keep it short, and do not throw
 * (what a listener throws is logged and dropped).
 */
public interface DynamoListener {

    /**
     * A call of this runtime is sending its request; {@link #callEnded} follows for each, on any thread. Together
     * they give the calls in flight per endpoint.
     */
    default void callStarted(EndpointId endpoint) {
    }

    /**
     * A call of this runtime ended: its stream complete (or stopped and drained), or failed, or killed, or the call
     * failed before it had a stream.
     *
     * @param elapsed from sending the request to the stream's end
     * @param failure null when the stream ended normally; {@link DynamoCancelledException} when this side killed it
     */
    default void callEnded(EndpointId endpoint, Duration elapsed, @Nullable DynamoException failure) {
    }

    /**
     * A request to one of this runtime's endpoints was accepted and its handler is about to run. Told on the thread
     * that runs the handler, and {@link #requestEnded} follows on that same thread once the handler and its stream
     * are done: what lets an observation be current while the handler runs.
     */
    default void requestStarted(EndpointId endpoint) {
    }

    /**
     * A request to one of this runtime's endpoints ended.
     *
     * @param elapsed from accepting it to its stream's end
     * @param failure what the handler threw (its caller got an error event), a {@link DynamoCancelledException} when
     *                the caller killed the request or went away, or null
     */
    default void requestEnded(EndpointId endpoint, Duration elapsed, @Nullable Throwable failure) {
    }

    /** A request to one of this runtime's endpoints was refused when it arrived (for example {@code "Server overloaded"}). */
    default void requestRefused(EndpointId endpoint, String reason) {
    }
}
