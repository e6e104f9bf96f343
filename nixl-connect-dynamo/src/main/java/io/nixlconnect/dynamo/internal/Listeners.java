package io.nixlconnect.dynamo.internal;

import io.nixlconnect.dynamo.DynamoException;
import io.nixlconnect.dynamo.DynamoListener;
import io.nixlconnect.dynamo.EndpointId;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The runtime's listeners, each told in turn; one that throws is logged and the rest still told. */
public final class Listeners {

    private static final Logger LOG = LoggerFactory.getLogger(Listeners.class);

    private final List<DynamoListener> listeners = new CopyOnWriteArrayList<>();

    public void add(DynamoListener listener) {
        listeners.add(listener);
    }

    public void remove(DynamoListener listener) {
        listeners.remove(listener);
    }

    private void each(Consumer<DynamoListener> event) {
        for (DynamoListener listener : listeners) {
            try {
                event.accept(listener);
            } catch (RuntimeException e) {
                LOG.warn("a DynamoListener failed", e);
            }
        }
    }

    public void callStarted(EndpointId endpoint, String requestId) {
        if (!listeners.isEmpty()) {
            each(listener -> listener.callStarted(endpoint, requestId));
        }
    }

    public void callEnded(EndpointId endpoint, String requestId, long startedNanos, @Nullable DynamoException failure) {
        if (!listeners.isEmpty()) {
            Duration elapsed = Duration.ofNanos(System.nanoTime() - startedNanos);
            each(listener -> listener.callEnded(endpoint, requestId, elapsed, failure));
        }
    }

    public void requestStarted(EndpointId endpoint, String requestId) {
        if (!listeners.isEmpty()) {
            each(listener -> listener.requestStarted(endpoint, requestId));
        }
    }

    public void requestEnded(EndpointId endpoint, String requestId, long startedNanos, @Nullable Throwable failure) {
        if (!listeners.isEmpty()) {
            Duration elapsed = Duration.ofNanos(System.nanoTime() - startedNanos);
            each(listener -> listener.requestEnded(endpoint, requestId, elapsed, failure));
        }
    }

    public void requestRefused(EndpointId endpoint, @Nullable String requestId, String reason) {
        if (!listeners.isEmpty()) {
            each(listener -> listener.requestRefused(endpoint, requestId, reason));
        }
    }
}
