package io.nixlconnect.autoconfigure.dynamo;

import io.nixlconnect.dynamo.DiscoveryBackend;
import io.nixlconnect.dynamo.DynamoCounters;
import io.nixlconnect.dynamo.DynamoRuntime;
import io.nixlconnect.dynamo.DynamoSettings;
import io.nixlconnect.dynamo.ServedEndpoint;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

/**
 * {@code dynamo}: UP while discovery answers (and, with etcd, this runtime's lease is alive) and every endpoint the
 * application declared is registered; DOWN with the reason otherwise, and once shutdown has begun. Details: the
 * discovery backend and where it is, each served endpoint (instance id, registered, requests in flight) and the
 * runtime's counters of what it refused.
 */
public class DynamoHealthIndicator extends AbstractHealthIndicator {

    private final DynamoRuntime runtime;
    private final DynamoRuntimeLifecycle lifecycle;

    /** @param lifecycle the lifecycle serving the declared endpoints, or null when there is none */
    public DynamoHealthIndicator(DynamoRuntime runtime, DynamoRuntimeLifecycle lifecycle) {
        super("Dynamo health check failed");
        this.runtime = runtime;
        this.lifecycle = lifecycle;
    }

    @Override
    protected void doHealthCheck(Health.Builder builder) {
        DynamoSettings settings = runtime.settings();
        List<ServedEndpoint> declared = lifecycle != null ? lifecycle.servedEndpoints() : runtime.servedEndpoints();
        List<String> unregistered = declared.stream().filter(endpoint -> !endpoint.isRegistered())
                .map(endpoint -> endpoint.endpoint().toString()).toList();
        boolean discoveryHealthy = runtime.isDiscoveryHealthy();
        if (lifecycle != null && lifecycle.isStopped()) {
            builder.down().withDetail("reason", "shut down: endpoints deregistered");
        } else if (!discoveryHealthy) {
            builder.down().withDetail("reason", settings.discoveryBackend() == DiscoveryBackend.ETCD
                    ? "etcd did not answer, or this runtime's lease was lost, when last used"
                    : "the discovery directory could not be read or written when last used");
        } else if (!unregistered.isEmpty()) {
            builder.down().withDetail("reason", "not registered in discovery: " + String.join(", ", unregistered));
        } else {
            builder.up();
        }
        builder.withDetail("discovery", settings.discoveryBackend().wireName() + " "
                        + (settings.discoveryBackend() == DiscoveryBackend.FILE ? settings.fileKvDirectory()
                        : settings.etcdEndpoints()))
                .withDetail("discoveryHealthy", discoveryHealthy)
                .withDetail("endpoints", endpoints(runtime.servedEndpoints(), declared))
                .withDetail("counters", counters(runtime.counters()));
    }

    private static List<Map<String, Object>> endpoints(List<ServedEndpoint> served, List<ServedEndpoint> declared) {
        List<ServedEndpoint> all = new ArrayList<>(declared);
        served.stream().filter(endpoint -> !all.contains(endpoint)).forEach(all::add);
        List<Map<String, Object>> details = new ArrayList<>();
        for (ServedEndpoint endpoint : all) {
            Map<String, Object> detail = new LinkedHashMap<>();
            detail.put("endpoint", endpoint.endpoint().toString());
            detail.put("instance", Long.toHexString(endpoint.instanceId()));
            detail.put("registered", endpoint.isRegistered());
            detail.put("inFlight", endpoint.inFlight());
            details.add(detail);
        }
        return details;
    }

    private static Map<String, Object> counters(DynamoCounters counters) {
        Map<String, Object> detail = new LinkedHashMap<>();
        detail.put("callsInFlight", counters.callsInFlight());
        detail.put("requestsInFlight", counters.requestsInFlight());
        detail.put("requestsRefusedOverloaded", counters.requestsRefusedOverloaded());
        detail.put("protocolErrors", counters.protocolErrors());
        detail.put("discoveryEntriesRejected", counters.discoveryEntriesRejected());
        detail.put("discoveryErrors", counters.discoveryErrors());
        return detail;
    }
}
