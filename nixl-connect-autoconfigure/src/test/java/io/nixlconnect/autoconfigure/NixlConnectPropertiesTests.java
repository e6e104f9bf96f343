package io.nixlconnect.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import io.nixlconnect.transport.nixl.NixlSettings;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * Every {@code nixl.connect.*} default is the library's (as Spring Boot's {@code RabbitPropertiesTests} checks its
 * properties against the client library), in the bound properties and in the configuration metadata IDEs show.
 */
class NixlConnectPropertiesTests {

    private final NixlConnectProperties properties = new NixlConnectProperties();

    @Test
    void propertiesUseConsistentDefaultValues() {
        ConnectorOptions library = ConnectorOptions.builder().build();
        EmbeddedSettings embedded = EmbeddedSettings.defaults();
        NixlSettings nixl = NixlSettings.defaults();

        assertThat(properties.getOperationTimeout()).isEqualTo(library.operationTimeout());
        // The one deliberate difference: the library waits for a peer forever by default, a Spring application
        // (publishing per request) does not (docs/configuration.md says why).
        assertThat(library.passiveTimeout()).isNull();
        assertThat(properties.getPassiveTimeout()).isEqualTo(Duration.ofSeconds(60));
        assertThat(properties.getLimits().getMaxInFlightOperations()).isEqualTo(library.maxInFlightOperations());
        assertThat(properties.getLimits().getMaxMetadataSize().toBytes()).isEqualTo(library.maxMetadataSize());

        assertThat(properties.getEmbedded().getBindAddress()).isEqualTo(embedded.bindAddress());
        assertThat(properties.getEmbedded().getPort()).isEqualTo(embedded.port());
        assertThat(properties.getEmbedded().getAdvertisedAddress()).isEqualTo(embedded.advertisedAddress());
        assertThat(properties.getEmbedded().getMaxConnectionsPerPeer()).isEqualTo(embedded.maxConnectionsPerPeer());
        assertThat(properties.getEmbedded().isSameHostCopy()).isEqualTo(embedded.sameHostCopy());
        assertThat(properties.getEmbedded().getTcpStreams()).isEqualTo(embedded.tcpStreams());
        assertThat(properties.getEmbedded().getSharedSecret()).isNull();
        assertThat(embedded.sharedSecret()).isNull();
        assertThat(properties.getEmbedded().getSsl().getBundle()).isNull();
        assertThat(embedded.sslContext()).isNull();
        assertThat(properties.getEmbedded().getIdleTimeout()).isEqualTo(embedded.idleTimeout());
        assertThat(properties.getEmbedded().getReadTimeout()).isEqualTo(embedded.readTimeout());
        assertThat(properties.getEmbedded().getMaxConnections()).isEqualTo(embedded.maxServerConnections());
        assertThat(properties.getEmbedded().getMaxConnectionsPerAddress()).isEqualTo(embedded.maxConnectionsPerAddress());
        assertThat(properties.getEmbedded().getMaxRangesPerRequest()).isEqualTo(embedded.maxRangesPerRequest());
        assertThat(properties.getEmbedded().getPeerIdleTimeout()).isEqualTo(embedded.peerIdleTimeout());
        assertThat(properties.getEmbedded().getMaxCachedPeers()).isEqualTo(embedded.maxCachedPeers());
        assertThat(properties.getLimits().getMaxDescriptors()).isEqualTo(library.maxDescriptors());

        assertThat(properties.getNixl().getLibraryPath()).isNull();
        assertThat(nixl.libraryDir()).isNull();
        assertThat(properties.getNixl().getPluginDirectory()).isNull();
        assertThat(nixl.pluginDir()).isNull();
        assertThat(properties.getNixl().getBackends()).isEqualTo(nixl.backends());
        assertThat(properties.getNixl().getBackendParameters()).isEqualTo(nixl.backendParameters());
        assertThat(NixlConnectorFactory.nixl(properties.getNixl()).nixlProgressThreadDelayMicros())
                .isEqualTo(nixl.nixlProgressThreadDelayMicros()).isNegative();
        assertThat(properties.getNixl().isProgressThread()).isFalse();
        assertThat(properties.getNixl().getProgressThreadDelay()).isEqualTo(Duration.ofMillis(10));
        properties.getNixl().setProgressThread(true); // refused: NIXL's thread corrupted UCX's memory at close
        assertThatThrownBy(() -> NixlConnectorFactory.nixl(properties.getNixl()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not supported");
        assertThat(properties.getNixl().getMaxLoadedPeers()).isEqualTo(nixl.maxLoadedPeers()).isEqualTo(512);
        assertThat(properties.getNixl().getPeerIdleLimit()).isEqualTo(nixl.peerIdleLimit())
                .isEqualTo(Duration.ofMinutes(30));
        assertThat(properties.getNixl().getUcxLogFile()).isEqualTo(nixl.ucxLogFile())
                .endsWith("nixl-connect-ucx-%p.log");
        assertThat(properties.getNixl().isWarmUp()).isEqualTo(nixl.warmUp()).isTrue();
    }

    @Test
    void defaultPropertiesMapToTheLibraryDefaultOptions() {
        ConnectorOptions mapped = NixlConnectorFactory.options(properties, "app", null);
        ConnectorOptions library = ConnectorOptions.builder().build();
        // backend 'auto' is the library's default preference list, each backend with its own defaults.
        assertThat(properties.getBackend()).isEqualTo("auto");
        assertThat(mapped.transports()).isEqualTo(library.transports());
        assertThat(mapped.operationTimeout()).isEqualTo(library.operationTimeout());
        assertThat(mapped.passiveTimeout()).isEqualTo(properties.getPassiveTimeout());
        assertThat(mapped.maxInFlightOperations()).isEqualTo(library.maxInFlightOperations());
        assertThat(mapped.maxMetadataSize()).isEqualTo(library.maxMetadataSize());
        assertThat(mapped.maxDescriptors()).isEqualTo(library.maxDescriptors());
    }

    @Test
    void configurationMetadataShowsTheLibraryDefaults() throws IOException {
        Map<String, JsonNode> defaults = ConfigurationMetadata.defaults();
        assertThat(defaults.get("nixl.connect.backend").asString()).isEqualTo(properties.getBackend());
        assertThat(defaults.get("nixl.connect.embedded.bind-address").asString())
                .isEqualTo(EmbeddedSettings.DEFAULT_BIND_ADDRESS);
        assertThat(defaults.get("nixl.connect.embedded.port").asInt()).isEqualTo(EmbeddedSettings.DEFAULT_PORT);
        assertThat(defaults.get("nixl.connect.embedded.max-connections-per-peer").asInt())
                .isEqualTo(EmbeddedSettings.DEFAULT_MAX_CONNECTIONS_PER_PEER);
        assertThat(defaults.get("nixl.connect.embedded.tcp-streams").asInt())
                .isEqualTo(EmbeddedSettings.DEFAULT_TCP_STREAMS);
        assertThat(defaults.get("nixl.connect.embedded.max-ranges-per-request").asInt())
                .isEqualTo(EmbeddedSettings.DEFAULT_MAX_RANGES_PER_REQUEST);
        assertThat(defaults.get("nixl.connect.embedded.idle-timeout").asString())
                .isEqualTo(EmbeddedSettings.DEFAULT_IDLE_TIMEOUT.toSeconds() + "s");
        assertThat(defaults.get("nixl.connect.embedded.read-timeout").asString())
                .isEqualTo(EmbeddedSettings.DEFAULT_READ_TIMEOUT.toSeconds() + "s");
        assertThat(defaults.get("nixl.connect.embedded.max-connections").asInt())
                .isEqualTo(EmbeddedSettings.DEFAULT_MAX_SERVER_CONNECTIONS);
        assertThat(defaults.get("nixl.connect.embedded.max-connections-per-address").asInt())
                .isEqualTo(EmbeddedSettings.DEFAULT_MAX_CONNECTIONS_PER_ADDRESS);
        assertThat(defaults.get("nixl.connect.embedded.peer-idle-timeout").asString())
                .isEqualTo(EmbeddedSettings.DEFAULT_PEER_IDLE_TIMEOUT.toSeconds() + "s");
        assertThat(defaults.get("nixl.connect.embedded.max-cached-peers").asInt())
                .isEqualTo(EmbeddedSettings.DEFAULT_MAX_CACHED_PEERS);
        assertThat(defaults.get("nixl.connect.limits.max-descriptors").asInt())
                .isEqualTo(ConnectorOptions.DEFAULT_MAX_DESCRIPTORS);
        assertThat(defaults.get("nixl.connect.limits.max-in-flight-operations").asInt())
                .isEqualTo(ConnectorOptions.DEFAULT_MAX_IN_FLIGHT_OPERATIONS);
        assertThat(defaults.get("nixl.connect.limits.max-metadata-size").asString()).isEqualTo(
                (ConnectorOptions.DEFAULT_MAX_METADATA_SIZE / (1024 * 1024)) + "MB");
        assertThat(defaults.get("nixl.connect.passive-timeout").asString()).isEqualTo("60s");
        assertThat(defaults.get("nixl.connect.operation-timeout").asString())
                .isEqualTo(ConnectorOptions.DEFAULT_OPERATION_TIMEOUT.toSeconds() + "s");
        List<String> backends = defaults.get("nixl.connect.nixl.backends").valueStream().map(JsonNode::asString).toList();
        assertThat(backends).isEqualTo(NixlSettings.DEFAULT_BACKENDS);
    }
}
