package io.nixlconnect.autoconfigure;

import io.nixlconnect.Connector;
import io.nixlconnect.TransportStatus;
import io.nixlconnect.cuda.Cuda;
import io.nixlconnect.cuda.CudaAvailability;
import io.nixlconnect.cuda.CudaDevice;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

/**
 * {@code nixl}: UP while the connector accepts operations and its transport serves peers; DOWN with the
 * reason otherwise. Details: backend, agent, transport details (endpoint or NIXL plugins), operations in
 * flight, registered bytes, remote agents.
 */
public class NixlConnectHealthIndicator extends AbstractHealthIndicator {

    private final Connector connector;

    public NixlConnectHealthIndicator(Connector connector) {
        super("nixl-connect health check failed");
        this.connector = connector;
    }

    @Override
    protected void doHealthCheck(Health.Builder builder) {
        boolean serving = connector.isServing();
        boolean accepting = connector.isAccepting();
        if (serving && accepting) {
            builder.up();
        } else {
            builder.down().withDetail("reason", !accepting ? (serving ? "shutting down" : "closed") : "transport not serving");
        }
        TransportStatus status = connector.transportStatus();
        builder.withDetail("worker", connector.name())
                .withDetail("backend", status.backend())
                .withDetail("agent", status.agent())
                .withDetail("transport", transportDetail(status))
                .withDetail("inFlightOperations", connector.inFlightOperations())
                .withDetail("registeredBytes", connector.registeredBytes())
                .withDetail("remoteAgents", connector.remoteAgentCount())
                .withDetail("cudaDevices", cudaDevices());
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

    /** The visible CUDA devices, or why there are none (cached: probing the driver happens once). */
    private static Object cudaDevices() {
        CudaAvailability availability = Cuda.availability();
        if (!availability.available()) {
            return "unavailable: " + availability.reason();
        }
        return Cuda.open().devices().stream().map(CudaDevice::toString).toList();
    }
}
