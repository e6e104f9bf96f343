package io.nixlconnect.autoconfigure.health;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.entry;

import io.nixlconnect.Connector;
import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.Descriptor;
import io.nixlconnect.ReadableOperation;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import io.nixlconnect.cuda.Cuda;
import java.util.Map;
import tools.jackson.databind.json.JsonMapper;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The CUDA detail: only for applications that put JCuda on the class path, and then it says why there is no GPU. */
class NixlConnectHealthIndicatorTests {

    private final Connector connector = new Connector(ConnectorOptions.builder().workerId("health")
            .transports(EmbeddedSettings.defaults()).build());

    @AfterEach
    void close() {
        connector.close();
    }

    @Test
    void withJCudaOnTheClassPathHealthSaysWhyThereAreNoCudaDevices() {
        assertThat(new NixlConnectHealthIndicator(connector, true).health(true).getDetails())
                .containsEntry("cudaDevices", Cuda.availability().available()
                        ? Cuda.open().devices().stream().map(Object::toString).toList()
                        : "unavailable: " + Cuda.availability().reason());
    }

    @Test
    @SuppressWarnings("unchecked")
    void peerCountsAreDetailsOfTheirOwnAndFollowThePeers() {
        assertThat((Map<String, Object>) new NixlConnectHealthIndicator(connector, false).health(true).getDetails()
                .get("peers")).containsExactly(entry("cached", 0), entry("openConnections", 0), entry("evicted", 0L),
                        entry("reconnected", 0L), entry("departed", 0L), entry("idleClosed", 0L));
        try (Connector producer = new Connector(ConnectorOptions.builder().workerId("health-peer")
                .transports(EmbeddedSettings.defaults()).build());
             Descriptor source = new Descriptor(new byte[64]);
             Descriptor target = Descriptor.allocate(64);
             ReadableOperation readable = producer.createReadable(source)) {
            connector.read(readable.metadata(), target);
            Map<String, Object> peers = (Map<String, Object>) new NixlConnectHealthIndicator(connector, false)
                    .health(true).getDetails().get("peers");
            assertThat(peers).containsEntry("cached", 1);
            assertThat((int) peers.get("openConnections")).isPositive();
        }
    }

    @Test
    void detailsStayWithin4KiBWhateverTheNumberOfPeers() {
        for (int i = 0; i < 200; i++) { // producers that each serve one read and leave, as a fleet's do all day
            try (Connector producer = new Connector(ConnectorOptions.builder().workerId("fleet-" + i)
                    .transports(EmbeddedSettings.defaults()).build());
                 Descriptor source = new Descriptor(new byte[64]);
                 Descriptor target = Descriptor.allocate(64);
                 ReadableOperation readable = producer.createReadable(source)) {
                connector.read(readable.metadata(), target);
            }
        }
        Map<String, Object> details = new NixlConnectHealthIndicator(connector, false).health(true).getDetails();
        assertThat(JsonMapper.builder().build().writeValueAsString(details)).hasSizeLessThanOrEqualTo(4096);
    }

    @Test
    void withoutJCudaHealthLeavesCudaOut() {
        assertThat(new NixlConnectHealthIndicator(connector, false).health(true).getDetails())
                .doesNotContainKey("cudaDevices").containsKey("inFlightOperations");
        // This module's tests have no JCuda: the public constructor detects that.
        assertThat(new NixlConnectHealthIndicator(connector).health(true).getDetails()).doesNotContainKey("cudaDevices");
    }
}
