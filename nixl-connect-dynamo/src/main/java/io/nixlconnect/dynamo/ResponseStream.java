package io.nixlconnect.dynamo;

import java.util.Iterator;
import java.util.List;
import java.util.concurrent.Flow;
import org.jspecify.annotations.Nullable;

/**
 * The responses of one call, as the worker streams them: iterate them ({@link #read()}, {@link #iterator()},
 * {@link #readAll()}) or subscribe to them ({@link #subscribe}, with the subscriber's demand as backpressure); one
 * way per stream. Nothing is read before it is asked for: a caller that does not read holds the worker back (TCP's
 * own flow control), never this process's memory.
 *
 * <p>A worker's error event, a broken connection (the worker died), a frame that does not come within
 * {@link DynamoSettings#streamIdleTimeout()} or breaks the protocol: each ends the stream with its
 * {@link DynamoException}, thrown by the read or handed to {@link Flow.Subscriber#onError}. {@link #stop()} asks the
 * worker to stop (what it sent so far can still be read); {@link #kill()} and {@link #close()} drop the stream at
 * once. As with Dynamo's client, an instance leaving discovery fails the calls still waiting for it to call home; a
 * stream already open goes on, so that a worker shutting down gracefully (out of discovery first) can finish it. Thread-safe: another thread may stop, kill or close it while one reads.
 */
public interface ResponseStream extends Iterable<DynamoResponse>, Flow.Publisher<DynamoResponse>, AutoCloseable {

    /** The instance serving this call. */
    DynamoInstance instance();

    /** The request's id ({@code request-id}), as the worker sees it. */
    String requestId();

    /**
     * The next response, waiting for it; null when the stream is complete (or was stopped or killed here).
     *
     * @throws DynamoException the stream's failure (again on each later call)
     */
    @Nullable DynamoResponse read();

    /**
     * Every response left, in order, until the stream is complete.
     *
     * @throws DynamoException as {@link #read()}
     */
    List<DynamoResponse> readAll();

    /** An iterator over {@link #read()}: {@code hasNext} waits for the next response and throws its failure. */
    @Override
    Iterator<DynamoResponse> iterator();

    /**
     * Delivers the responses to one subscriber, on a runtime thread, as it requests them; cancelling kills the
     * stream. A second subscriber, or one after reading began, gets {@code onError(IllegalStateException)}.
     */
    @Override
    void subscribe(Flow.Subscriber<? super DynamoResponse> subscriber);

    /** Asks the worker to stop generating (Dynamo's {@code stop}); responses it already sent can still be read. */
    void stop();

    /** Tells the worker to drop the request (Dynamo's {@code kill}) and ends the stream here at once. */
    void kill();

    /** Whether every response was read and the worker said it was complete. */
    boolean isComplete();

    /** {@link #kill()} unless the stream is complete; reading after it returns null. */
    @Override
    void close();
}
