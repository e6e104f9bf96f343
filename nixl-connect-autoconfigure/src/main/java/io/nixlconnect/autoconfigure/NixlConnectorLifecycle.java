package io.nixlconnect.autoconfigure;

import io.nixlconnect.Connector;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;

/**
 * Ties the connector to the application context. The connector serves from construction, so starting only
 * records it; stopping refuses new operations, lets those in flight finish within the grace period, then
 * closes it (the bean's own close afterwards does nothing: close is idempotent).
 *
 * <p>Its phase is below the web server's, so on shutdown the web server drains its requests first (they may
 * be waiting on transfers) and the connector stops after; at start-up it is serving before requests arrive.
 */
public final class NixlConnectorLifecycle implements SmartLifecycle {

    /** Lower than the web server's lifecycles ({@code DEFAULT_PHASE - 2048} and {@code - 1024}). */
    public static final int PHASE = SmartLifecycle.DEFAULT_PHASE - 4096;

    private static final Logger log = LoggerFactory.getLogger(NixlConnectorLifecycle.class);

    private final Connector connector;
    private final Duration gracePeriod;
    private volatile boolean running;

    public NixlConnectorLifecycle(Connector connector, Duration gracePeriod) {
        this.connector = connector;
        this.gracePeriod = gracePeriod;
    }

    @Override
    public void start() {
        if (!connector.isAccepting()) {
            throw new IllegalStateException(connector + " was shut down and cannot be restarted");
        }
        running = true;
    }

    @Override
    public void stop() {
        if (!running) {
            return;
        }
        running = false;
        int inFlight = connector.inFlightOperations();
        if (inFlight > 0) {
            log.info("Shutting down {}: waiting up to {} for {} operation(s) in flight", connector, gracePeriod, inFlight);
        }
        if (!connector.shutdown(gracePeriod)) {
            log.warn("{}: operations still in flight after the grace period of {} were cancelled", connector, gracePeriod);
        }
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    @Override
    public int getPhase() {
        return PHASE;
    }
}
