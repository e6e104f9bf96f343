package io.nixlconnect.autoconfigure.health;

import io.nixlconnect.Connector;
import io.nixlconnect.PeerStatistics;
import io.nixlconnect.TransportStatus;
import io.nixlconnect.cuda.Cuda;
import io.nixlconnect.cuda.CudaAvailability;
import io.nixlconnect.cuda.CudaDevice;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;
import org.springframework.util.ClassUtils;

/**
 * {@code nixl}: UP while the connector accepts operations and its transport serves peers; OUT_OF_SERVICE while
 * it is at its in-flight limit (new operations are refused until some end); DOWN with the reason otherwise.
 * Details: backend, agent, transport details (endpoint or NIXL plugins), operations in flight and the limit,
 * registered bytes, remote agents, peer counts ({@code peers}: cached, open connections, evicted, reconnected,
 * departed, closed when idle), and the CUDA devices when JCuda is on the class path.
 */
public class NixlConnectHealthIndicator extends AbstractHealthIndicator {

    private final Connector connector;
    private final boolean cudaOnClassPath;

    public NixlConnectHealthIndicator(Connector connector) {
        this(connector, ClassUtils.isPresent("jcuda.driver.JCudaDriver", NixlConnectHealthIndicator.class.getClassLoader()));
    }

    NixlConnectHealthIndicator(Connector connector, boolean cudaOnClassPath) {
        super("nixl-connect health check failed");
        this.connector = connector;
        this.cudaOnClassPath = cudaOnClassPath;
    }

    @Override
    protected void doHealthCheck(Health.Builder builder) {
        boolean serving = connector.isServing();
        boolean accepting = connector.isAccepting();
        int inFlight = connector.inFlightOperations();
        int limit = connector.options().maxInFlightOperations();
        if (serving && accepting && inFlight >= limit) {
            builder.outOfService().withDetail("reason", "at capacity: " + inFlight + " of at most " + limit
                    + " operations in flight (nixl.connect.limits.max-in-flight-operations)");
        } else if (serving && accepting) {
            builder.up();
        } else {
            builder.down().withDetail("reason", !accepting ? (serving ? "shutting down" : "closed") : "transport not serving");
        }
        TransportStatus status = connector.transportStatus();
        builder.withDetail("worker", connector.name())
                .withDetail("backend", status.backend())
                .withDetail("agent", status.agent())
                .withDetail("transport", transportDetail(status))
                .withDetail("inFlightOperations", inFlight)
                .withDetail("maxInFlightOperations", limit)
                .withDetail("registeredBytes", connector.registeredBytes())
                .withDetail("remoteAgents", connector.remoteAgentCount())
                .withDetail("peers", peers(connector.peerStatistics()));
        if (cudaOnClassPath) { // a CPU-only application did not ask about GPUs
            builder.withDetail("cudaDevices", cudaDevices());
        }
    }

    /** The transport's own details, as {@code docs/observability.md} lists them: backend, agent, endpoint, counters. */
    private static Map<String, Object> transportDetail(TransportStatus status) {
        Map<String, Object> transport = new LinkedHashMap<>();
        transport.put("backend", status.backend());
        transport.put("agent", status.agent());
        if (status.endpoint() != null) {
            transport.put("endpoint", status.endpoint());
        }
        transport.putAll(status.details());
        return transport;
    }

    /** Counts only, so that the details stay small whatever the number of peers. */
    private static Map<String, Object> peers(PeerStatistics statistics) {
        Map<String, Object> peers = new LinkedHashMap<>();
        peers.put("cached", statistics.cachedPeers());
        peers.put("openConnections", statistics.openConnections());
        peers.put("evicted", statistics.evictions());
        peers.put("reconnected", statistics.reconnects());
        peers.put("departed", statistics.departedPeersClosed());
        peers.put("idleClosed", statistics.idleConnectionsClosed());
        return peers;
    }

    /** The visible CUDA devices, or why there are none (cached: probing the driver happens once). */
    private static Object cudaDevices() {
        CudaAvailability availability = Cuda.availability();
        if (!availability.available()) {
            return "unavailable: " + availability.reason();
        }
        return Cuda.open().devices().stream().map(CudaDevice::toString).toList();
    }
}
