package io.nixlconnect.dynamo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Settings: Dynamo's defaults, read from the environment as a Python worker reads it, refusing what is not spoken. */
class DynamoSettingsTest {

    @Test
    void defaultsAreDynamos() {
        DynamoSettings defaults = DynamoSettings.fromEnvironment(Map.of());
        assertThat(defaults.discoveryBackend()).isEqualTo(DiscoveryBackend.ETCD);
        assertThat(defaults.etcdEndpoints()).containsExactly(URI.create("http://localhost:2379"));
        assertThat(defaults.etcdLeaseTtl()).isEqualTo(Duration.ofSeconds(30));
        assertThat(defaults.fileKvDirectory()).isEqualTo(Path.of("/tmp/dynamo_store_kv"));
        assertThat(defaults.fileKvTtl()).isEqualTo(Duration.ofSeconds(10));
        assertThat(defaults.maxMessageSize()).isEqualTo(32 * 1024 * 1024);
        assertThat(defaults.servedCodec()).isEqualTo(PayloadCodec.MSGPACK);
        assertThat(defaults.callHomeTimeout()).isEqualTo(Duration.ofSeconds(10));
        assertThat(defaults.rpcPort()).isZero();
        assertThat(defaults.responseStreamHost()).isEqualTo(defaults.rpcHost());
        assertThat(defaults.maxConcurrentRequests()).isEqualTo(DynamoSettings.DEFAULT_MAX_CONCURRENT_REQUESTS);
        assertThat(defaults.requestConnectionIdleTimeout()).as("Dynamo's DYN_TCP_HOST_IDLE_TTL_SECS default")
                .isEqualTo(Duration.ofSeconds(300));
        assertThat(defaults.serverConnectionIdleTimeout()).as("longer than a Dynamo caller keeps an idle connection")
                .isEqualTo(Duration.ofSeconds(600)).isGreaterThan(defaults.requestConnectionIdleTimeout().multipliedBy(3).dividedBy(2));
        assertThat(DynamoSettings.builder().build()).isEqualTo(defaults.toBuilder().build());
    }

    @Test
    void theEnvironmentAPythonWorkerReadsSetsTheDefaults() {
        DynamoSettings settings = DynamoSettings.fromEnvironment(Map.ofEntries(
                Map.entry("DYN_DISCOVERY_BACKEND", "file"), Map.entry("DYN_FILE_KV", "/var/kv"),
                Map.entry("ETCD_ENDPOINTS", "http://a:1, b:2"), Map.entry("ETCD_LEASE_TTL", "7"),
                Map.entry("DYN_TCP_RPC_HOST", "10.1.2.3"), Map.entry("DYN_TCP_RPC_PORT", "4000"),
                Map.entry("DYN_TCP_RESPONSE_STREAM_HOST", "10.1.2.4"), Map.entry("DYN_TCP_RESPONSE_STREAM_PORT", "4001"),
                Map.entry("DYN_TCP_MAX_MESSAGE_SIZE", "1048576"), Map.entry("DYN_REQUEST_PLANE_CODEC", "json"),
                Map.entry("DYN_REQUEST_PLANE", "tcp"), Map.entry("DYN_RESPONSE_PLANE", "tcp"),
                Map.entry("DYN_TCP_HOST_IDLE_TTL_SECS", "42")));
        assertThat(settings.discoveryBackend()).isEqualTo(DiscoveryBackend.FILE);
        assertThat(settings.fileKvDirectory()).isEqualTo(Path.of("/var/kv"));
        assertThat(settings.etcdEndpoints()).containsExactly(URI.create("http://a:1"), URI.create("http://b:2"));
        assertThat(settings.etcdLeaseTtl()).isEqualTo(Duration.ofSeconds(7));
        assertThat(settings.rpcHost()).isEqualTo("10.1.2.3");
        assertThat(settings.rpcPort()).isEqualTo(4000);
        assertThat(settings.responseStreamHost()).isEqualTo("10.1.2.4");
        assertThat(settings.responseStreamPort()).isEqualTo(4001);
        assertThat(settings.maxMessageSize()).isEqualTo(1048576);
        assertThat(settings.servedCodec()).isEqualTo(PayloadCodec.JSON);
        assertThat(settings.requestConnectionIdleTimeout()).isEqualTo(Duration.ofSeconds(42));
        assertThat(DynamoSettings.fromEnvironment(Map.of("TMPDIR", "/scratch")).fileKvDirectory())
                .isEqualTo(Path.of("/scratch/dynamo_store_kv"));
        assertThat(DynamoSettings.fromEnvironment(Map.of("DYN_TCP_RPC_HOST", "10.9.9.9")).responseStreamHost())
                .as("the response stream host follows the RPC host").isEqualTo("10.9.9.9");
    }

    @Test
    void whatIsNotSpokenIsRefusedNamingTheVariableAndTheVersion() {
        assertThatThrownBy(() -> DynamoSettings.fromEnvironment(Map.of("DYN_DISCOVERY_BACKEND", "kubernetes")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("DYN_DISCOVERY_BACKEND")
                .hasMessageContaining("1.6.x");
        assertThatThrownBy(() -> DynamoSettings.fromEnvironment(Map.of("DYN_REQUEST_PLANE", "nats")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("NATS".toLowerCase())
                .hasMessageContaining("1.6.x");
        assertThatThrownBy(() -> DynamoSettings.fromEnvironment(Map.of("DYN_RESPONSE_PLANE", "quic")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("quic");
        assertThatThrownBy(() -> DynamoSettings.fromEnvironment(Map.of("ETCD_AUTH_USERNAME", "root")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("authentication");
        assertThatThrownBy(() -> DynamoSettings.fromEnvironment(Map.of("DYN_TCP_RPC_PORT", "eighty")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("DYN_TCP_RPC_PORT=eighty");
        assertThatThrownBy(() -> DynamoSettings.fromEnvironment(Map.of("DYN_REQUEST_PLANE_CODEC", "cbor")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("json or msgpack");
        assertThatThrownBy(() -> DynamoSettings.fromEnvironment(Map.of("DYN_TCP_HOST_IDLE_TTL_SECS", "0")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("DYN_TCP_HOST_IDLE_TTL_SECS=0")
                .hasMessageContaining("at least 1 second");
    }

    @Test
    void outOfRangeSettingsAreRefusedByName() {
        assertThatThrownBy(() -> DynamoSettings.builder().maxMessageSize(10).build())
                .hasMessageContaining("maxMessageSize");
        assertThatThrownBy(() -> DynamoSettings.builder().maxConcurrentRequests(0).build())
                .hasMessageContaining("maxConcurrentRequests");
        assertThatThrownBy(() -> DynamoSettings.builder().etcdEndpoints(List.of(URI.create("ftp://x"))).build())
                .hasMessageContaining("http");
        assertThatThrownBy(() -> DynamoSettings.builder().callHomeTimeout(Duration.ZERO).build())
                .hasMessageContaining("callHomeTimeout");
        assertThatThrownBy(() -> DynamoSettings.builder().rpcPort(70000).build()).hasMessageContaining("rpcPort");
        assertThatThrownBy(() -> DynamoSettings.builder().fileKvTtl(Duration.ofMillis(10)).build())
                .hasMessageContaining("fileKvTtl");
        assertThatThrownBy(() -> DynamoSettings.builder().requestConnectionIdleTimeout(Duration.ZERO).build())
                .hasMessageContaining("requestConnectionIdleTimeout");
        assertThatThrownBy(() -> DynamoSettings.builder().serverConnectionIdleTimeout(Duration.ofSeconds(-1)).build())
                .hasMessageContaining("serverConnectionIdleTimeout");
    }

    @Test
    void endpointNamesParseAsDynamoWritesThem() {
        assertThat(EndpointId.parse("ns.comp.ep")).isEqualTo(new EndpointId("ns", "comp", "ep"));
        assertThat(EndpointId.parse("ns.comp.ep")).hasToString("ns.comp.ep");
        assertThatThrownBy(() -> EndpointId.parse("ns.comp")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> EndpointId.parse("ns..ep")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new EndpointId("a/b", "c", "d")).isInstanceOf(IllegalArgumentException.class);
    }
}
