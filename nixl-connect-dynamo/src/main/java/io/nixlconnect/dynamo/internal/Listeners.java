package io.nixlconnect.dynamo.internal;

import io.nixlconnect.dynamo.DynamoException;
import io.nixlconnect.dynamo.DynamoListener;
import io.nixlconnect.dynamo.EndpointId;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
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

    public void callStarted(EndpointId endpoint) {
        for (DynamoListener listener : listeners) {
            try {
                listener.callStarted(endpoint);
            } catch (RuntimeException e) {
                LOG.warn("a DynamoListener failed", e);
            }
        }
    }

    public void requestStarted(EndpointId endpoint) {
        for (DynamoListener listener : listeners) {
            try {
                listener.requestStarted(endpoint);
            } catch (RuntimeException e) {
                LOG.warn("a DynamoListener failed", e);
            }
        }
    }

    public void callEnded(EndpointId endpoint, long startedNanos, @Nullable DynamoException failure) {
        if (listeners.isEmpty()) {
            return;
        }
        Duration elapsed = Duration.ofNanos(System.nanoTime() - startedNanos);
        for (DynamoListener listener : listeners) {
            try {
                listener.callEnded(endpoint, elapsed, failure);
            } catch (RuntimeException e) {
                LOG.warn("a DynamoListener failed", e);
            }
        }
    }

    public void requestEnded(EndpointId endpoint, long startedNanos, @Nullable Throwable failure) {
        if (listeners.isEmpty()) {
            return;
        }
        Duration elapsed = Duration.ofNanos(System.nanoTime() - startedNanos);
        for (DynamoListener listener : listeners) {
            try {
                listener.requestEnded(endpoint, elapsed, failure);
            } catch (RuntimeException e) {
                LOG.warn("a DynamoListener failed", e);
            }
        }
    }

    public void requestRefused(EndpointId endpoint, String reason) {
        for (DynamoListener listener : listeners) {
            try {
                listener.requestRefused(endpoint, reason);
            } catch (RuntimeException e) {
                LOG.warn("a DynamoListener failed", e);
            }
        }
    }
}
