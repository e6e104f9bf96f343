package io.nixlconnect.autoconfigure.dynamo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nixlconnect.autoconfigure.ConfigurationMetadata;
import io.nixlconnect.dynamo.DiscoveryBackend;
import io.nixlconnect.dynamo.DynamoSettings;
import io.nixlconnect.dynamo.PayloadCodec;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.springframework.mock.env.MockEnvironment;
import org.springframework.util.unit.DataSize;
import tools.jackson.databind.JsonNode;

/**
 * Every {@code nixl.connect.dynamo.*} default is the module's: unset, those a Dynamo variable covers are what
 * {@link DynamoSettings#fromEnvironment(Map)} makes of the environment; the others are {@link DynamoSettings}' own
 * defaults, in the bound properties and in the configuration metadata IDEs show.
 */
class NixlDynamoPropertiesTests {

    private final NixlDynamoProperties properties = new NixlDynamoProperties();

    /** A Dynamo worker's environment with every variable set to something other than Dynamo's default. */
    private static Map<String, String> workerEnvironment() {
        Map<String, String> environment = new LinkedHashMap<>();
        environment.put("DYN_DISCOVERY_BACKEND", "file");
        environment.put("DYN_FILE_KV", "/srv/dynamo-kv");
        environment.put("ETCD_ENDPOINTS", "http://etcd-1:2379,etcd-2:2379");
        environment.put("ETCD_LEASE_TTL", "12");
        environment.put("DYN_TCP_RPC_HOST", "10.1.2.3");
        environment.put("DYN_TCP_RPC_PORT", "7001");
        environment.put("DYN_TCP_RESPONSE_STREAM_HOST", "10.1.2.4");
        environment.put("DYN_TCP_RESPONSE_STREAM_PORT", "7002");
        environment.put("DYN_REQUEST_PLANE_CODEC", "json");
        environment.put("DYN_TCP_MAX_MESSAGE_SIZE", "1048576");
        environment.put("DYN_TCP_HOST_IDLE_TTL_SECS", "45");
        environment.put("DYN_REQUEST_PLANE", "tcp");
        environment.put("DYN_RESPONSE_PLANE", "tcp");
        return environment;
    }

    @Test
    void propertiesUseConsistentDefaultValues() {
        DynamoSettings library = DynamoSettings.defaults();
        assertThat(properties.isEnabled()).isFalse();
        // Covered by a Dynamo variable: unset, so that the variable (or Dynamo's default) applies.
        assertThat(properties.getDiscoveryBackend()).isNull();
        assertThat(properties.getFileKvDirectory()).isNull();
        assertThat(properties.getEtcdEndpoints()).isNull();
        assertThat(properties.getEtcdLeaseTtl()).isNull();
        assertThat(properties.getRpcHost()).isNull();
        assertThat(properties.getRpcPort()).isNull();
        assertThat(properties.getResponseStreamHost()).isNull();
        assertThat(properties.getResponseStreamPort()).isNull();
        assertThat(properties.getServedCodec()).isNull();
        assertThat(properties.getMaxMessageSize()).isNull();
        assertThat(properties.getRequestConnectionIdleTimeout()).isNull();
        // The rest: the module's defaults.
        assertThat(properties.getFileKvTtl()).isEqualTo(library.fileKvTtl());
        assertThat(properties.getEtcdRequestTimeout()).isEqualTo(library.etcdRequestTimeout());
        assertThat(properties.getConnectTimeout()).isEqualTo(library.connectTimeout());
        assertThat(properties.getAckTimeout()).isEqualTo(library.ackTimeout());
        assertThat(properties.getCallHomeTimeout()).isEqualTo(library.callHomeTimeout());
        assertThat(properties.getStreamIdleTimeout()).isEqualTo(library.streamIdleTimeout());
        assertThat(properties.getFrameReadTimeout()).isEqualTo(library.frameReadTimeout());
        assertThat(properties.getMaxConcurrentRequests()).isEqualTo(library.maxConcurrentRequests());
        assertThat(properties.getMaxServerConnections()).isEqualTo(library.maxServerConnections());
        assertThat(properties.getShutdownGrace()).isEqualTo(library.shutdownGrace());
        assertThat(properties.getServerConnectionIdleTimeout()).isEqualTo(library.serverConnectionIdleTimeout());
    }

    @Test
    void unsetPropertiesAreWhatTheModuleMakesOfTheEnvironment() {
        assertThat(NixlDynamoSettings.settings(properties, Map.of())).isEqualTo(DynamoSettings.defaults());
        Map<String, String> environment = workerEnvironment();
        assertThat(NixlDynamoSettings.settings(properties, environment))
                .isEqualTo(DynamoSettings.fromEnvironment(environment));
    }

    @Test
    void propertiesOverrideTheEnvironment() {
        properties.setDiscoveryBackend(DiscoveryBackend.ETCD);
        properties.setFileKvDirectory(Path.of("/elsewhere"));
        properties.setEtcdEndpoints(List.of(URI.create("https://etcd:2379")));
        properties.setEtcdLeaseTtl(Duration.ofSeconds(7));
        properties.setRpcHost("10.9.9.9");
        properties.setRpcPort(8001);
        properties.setResponseStreamPort(8002);
        properties.setServedCodec(PayloadCodec.MSGPACK);
        properties.setMaxMessageSize(DataSize.ofMegabytes(2));
        properties.setAckTimeout(Duration.ofSeconds(3));
        properties.setMaxConcurrentRequests(9);
        properties.setRequestConnectionIdleTimeout(Duration.ofSeconds(20));
        properties.setServerConnectionIdleTimeout(Duration.ofMinutes(3));
        DynamoSettings settings = NixlDynamoSettings.settings(properties, workerEnvironment());
        assertThat(settings.discoveryBackend()).isEqualTo(DiscoveryBackend.ETCD);
        assertThat(settings.fileKvDirectory()).isEqualTo(Path.of("/elsewhere"));
        assertThat(settings.etcdEndpoints()).containsExactly(URI.create("https://etcd:2379"));
        assertThat(settings.etcdLeaseTtl()).isEqualTo(Duration.ofSeconds(7));
        assertThat(settings.rpcHost()).isEqualTo("10.9.9.9");
        assertThat(settings.rpcPort()).isEqualTo(8001);
        // Set in the environment, not by a property: the environment's.
        assertThat(settings.responseStreamHost()).isEqualTo("10.1.2.4");
        assertThat(settings.responseStreamPort()).isEqualTo(8002);
        assertThat(settings.servedCodec()).isEqualTo(PayloadCodec.MSGPACK);
        assertThat(settings.maxMessageSize()).isEqualTo(2 * 1024 * 1024);
        assertThat(settings.ackTimeout()).isEqualTo(Duration.ofSeconds(3));
        assertThat(settings.maxConcurrentRequests()).isEqualTo(9);
        assertThat(settings.requestConnectionIdleTimeout()).as("over DYN_TCP_HOST_IDLE_TTL_SECS")
                .isEqualTo(Duration.ofSeconds(20));
        assertThat(settings.serverConnectionIdleTimeout()).isEqualTo(Duration.ofMinutes(3));
    }

    @Test
    void theResponseStreamHostFollowsAnRpcHostPropertyAsItFollowsTheVariable() {
        properties.setRpcHost("10.9.9.9");
        assertThat(NixlDynamoSettings.settings(properties, Map.of()).responseStreamHost()).isEqualTo("10.9.9.9");
        properties.setResponseStreamHost("10.8.8.8");
        assertThat(NixlDynamoSettings.settings(properties, Map.of()).responseStreamHost()).isEqualTo("10.8.8.8");
    }

    @Test
    void refusedValuesNameTheSettingOrTheVariable() {
        properties.setMaxConcurrentRequests(0);
        assertThatThrownBy(() -> NixlDynamoSettings.settings(properties, Map.of()))
                .hasMessageContaining("maxConcurrentRequests must be >= 1");
        properties.setMaxConcurrentRequests(1);
        properties.setMaxMessageSize(DataSize.ofGigabytes(4));
        assertThatThrownBy(() -> NixlDynamoSettings.settings(properties, Map.of()))
                .hasMessageContaining("maxMessageSize must be at most");
        properties.setMaxMessageSize(null);
        assertThatThrownBy(() -> NixlDynamoSettings.settings(properties, Map.of("DYN_REQUEST_PLANE", "nats")))
                .hasMessageContaining("DYN_REQUEST_PLANE=nats").hasMessageContaining("1.6.x");
    }

    /** If the module starts reading another variable, this list (and Spring's view of it) must follow. */
    @Test
    void theVariablesLookedUpAreExactlyThoseTheModuleReads() {
        Set<String> read = new LinkedHashSet<>();
        DynamoSettings.fromEnvironment(new HashMap<>() {
            @Override
            public String get(Object key) {
                read.add((String) key);
                return null;
            }
        });
        assertThat(NixlDynamoSettings.VARIABLES).containsExactlyInAnyOrderElementsOf(read);
    }

    @Test
    void theVariablesAreReadThroughSpringsEnvironment() {
        MockEnvironment environment = new MockEnvironment();
        workerEnvironment().forEach(environment::setProperty);
        environment.setProperty("UNRELATED", "x");
        assertThat(NixlDynamoSettings.dynamoEnvironment(environment)).isEqualTo(workerEnvironment());
    }

    @Test
    void configurationMetadataShowsTheModuleDefaults() throws IOException {
        Map<String, JsonNode> defaults = ConfigurationMetadata.defaults();
        assertThat(defaults.get("nixl.connect.dynamo.enabled").asBoolean()).isFalse();
        assertThat(duration(defaults, "file-kv-ttl")).isEqualTo(Duration.ofSeconds(DynamoSettings.DEFAULT_FILE_KV_TTL_SECONDS));
        assertThat(duration(defaults, "etcd-request-timeout")).isEqualTo(DynamoSettings.DEFAULT_ETCD_REQUEST_TIMEOUT);
        assertThat(duration(defaults, "connect-timeout")).isEqualTo(DynamoSettings.DEFAULT_CONNECT_TIMEOUT);
        assertThat(duration(defaults, "ack-timeout")).isEqualTo(DynamoSettings.DEFAULT_ACK_TIMEOUT);
        assertThat(duration(defaults, "call-home-timeout"))
                .isEqualTo(Duration.ofSeconds(DynamoSettings.DEFAULT_CALL_HOME_TIMEOUT_SECONDS));
        assertThat(duration(defaults, "stream-idle-timeout")).isEqualTo(DynamoSettings.DEFAULT_STREAM_IDLE_TIMEOUT);
        assertThat(duration(defaults, "frame-read-timeout")).isEqualTo(DynamoSettings.DEFAULT_FRAME_READ_TIMEOUT);
        assertThat(duration(defaults, "shutdown-grace")).isEqualTo(DynamoSettings.DEFAULT_SHUTDOWN_GRACE);
        assertThat(duration(defaults, "server-connection-idle-timeout"))
                .isEqualTo(Duration.ofSeconds(DynamoSettings.DEFAULT_SERVER_CONNECTION_IDLE_TIMEOUT_SECONDS));
        assertThat(defaults.get("nixl.connect.dynamo.max-concurrent-requests").asInt())
                .isEqualTo(DynamoSettings.DEFAULT_MAX_CONCURRENT_REQUESTS);
        assertThat(defaults.get("nixl.connect.dynamo.max-server-connections").asInt())
                .isEqualTo(DynamoSettings.DEFAULT_MAX_SERVER_CONNECTIONS);
        // Those a Dynamo variable covers show no default: it depends on the environment.
        for (String name : List.of("discovery-backend", "file-kv-directory", "etcd-endpoints", "etcd-lease-ttl",
                "rpc-host", "rpc-port", "response-stream-host", "response-stream-port", "served-codec",
                "max-message-size", "request-connection-idle-timeout")) {
            assertThat(defaults).doesNotContainKey("nixl.connect.dynamo." + name);
        }
    }

    private static Duration duration(Map<String, JsonNode> defaults, String name) {
        String text = defaults.get("nixl.connect.dynamo." + name).asString();
        return org.springframework.boot.convert.DurationStyle.detectAndParse(text);
    }
}
