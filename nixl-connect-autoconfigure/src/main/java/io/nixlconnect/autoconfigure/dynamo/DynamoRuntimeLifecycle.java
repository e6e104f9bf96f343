package io.nixlconnect.autoconfigure.dynamo;

import io.nixlconnect.autoconfigure.DrainingLifecycle;
import io.nixlconnect.autoconfigure.NixlConnectorLifecycle;
import io.nixlconnect.dynamo.DynamoRuntime;
import io.nixlconnect.dynamo.ServedEndpoint;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;

/**
 * Ties the {@link DynamoRuntime} to the application context. Starting serves every {@link DynamoEndpointRegistration}
 * bean (each registered in discovery); stopping closes the runtime, which deregisters every endpoint first (callers
 * stop routing here), waits up to {@code shutdownGrace} for requests in flight, then closes its clients and
 * discovery (an etcd lease is revoked).
 *
 * <p>Its phase lies between the web server's and the connector's ({@link NixlConnectorLifecycle#PHASE}): at start-up
 * the connector serves before endpoints are registered, and endpoints before the web server takes requests; on
 * shutdown web requests (which may call Dynamo endpoints) drain first, then Dynamo's requests (which may be
 * transferring through the connector), then the connector.
 */
public final class DynamoRuntimeLifecycle extends DrainingLifecycle {

    /** Above the connector's ({@code DEFAULT_PHASE - 4096}), below the web server's ({@code - 2048}). */
    public static final int PHASE = SmartLifecycle.DEFAULT_PHASE - 3072;

    private static final Logger log = LoggerFactory.getLogger(DynamoRuntimeLifecycle.class);

    private final DynamoRuntime runtime;
    private final List<DynamoEndpointRegistration> registrations;
    private final List<ServedEndpoint> served = new CopyOnWriteArrayList<>();
    private volatile boolean stopped;

    /** Stopping waits up to {@code nixl.connect.dynamo.shutdown-grace}: keep it below Boot's shutdown-phase timeout. */
    public DynamoRuntimeLifecycle(DynamoRuntime runtime, List<DynamoEndpointRegistration> registrations) {
        super(PHASE, "nixl-dynamo-shutdown");
        this.runtime = runtime;
        this.registrations = List.copyOf(registrations);
    }

    /**
     * Serves each registration, in order.
     *
     * @throws IllegalStateException after a stop: a closed runtime cannot serve again
     */
    @Override
    protected void starting() {
        if (stopped) {
            throw new IllegalStateException(runtime + " was shut down and cannot be restarted");
        }
        for (DynamoEndpointRegistration registration : registrations) {
            served.add(runtime.serve(registration.endpoint(), registration.handler()));
        }
        if (!served.isEmpty()) {
            log.info("Serving {} on Dynamo ({} discovery)", served.stream().map(endpoint -> endpoint.endpoint()
                    + " as instance " + Long.toHexString(endpoint.instanceId())).collect(Collectors.joining(", ")),
                    runtime.settings().discoveryBackend().wireName());
        }
    }

    @Override
    protected void shutdown() {
        stopped = true;
        long inFlight = runtime.counters().requestsInFlight();
        log.info("Stopping {}: deregistering {} endpoint(s), waiting up to {} for {} request(s) in flight", runtime,
                served.size(), runtime.settings().shutdownGrace(), inFlight);
        long started = System.nanoTime();
        runtime.close();
        log.info("Stopped {} in {} ms", runtime, (System.nanoTime() - started) / 1_000_000);
    }

    /** The endpoints it registered at start-up. */
    public List<ServedEndpoint> servedEndpoints() {
        return List.copyOf(served);
    }

    /** Whether it was stopped (the runtime is closed). */
    public boolean isStopped() {
        return stopped;
    }
}
