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
public final class NixlConnectorLifecycle extends DrainingLifecycle {

    /** Lower than the web server's lifecycles ({@code DEFAULT_PHASE - 2048} and {@code - 1024}). */
    public static final int PHASE = SmartLifecycle.DEFAULT_PHASE - 4096;

    private static final Logger log = LoggerFactory.getLogger(NixlConnectorLifecycle.class);

    private final Connector connector;
    private final Duration gracePeriod;

    public NixlConnectorLifecycle(Connector connector, Duration gracePeriod) {
        super(PHASE, "nixl-connect-shutdown");
        this.connector = connector;
        this.gracePeriod = gracePeriod;
    }

    @Override
    protected void starting() {
        if (!connector.isAccepting()) {
            throw new IllegalStateException(connector + " was shut down and cannot be restarted");
        }
    }

    /** One log line when draining begins, one when it ends. */
    @Override
    protected void shutdown() {
        int inFlight = connector.inFlightOperations();
        log.info("Stopping {}: refusing new operations, waiting up to {} for {} in flight", connector, gracePeriod,
                inFlight);
        long started = System.nanoTime();
        if (connector.shutdown(gracePeriod)) {
            log.info("Stopped {} in {} ms: every operation ended", connector,
                    (System.nanoTime() - started) / 1_000_000);
        } else {
            log.warn("Stopped {} after the grace period of {}: operations still in flight were cancelled", connector,
                    gracePeriod);
        }
    }
}
