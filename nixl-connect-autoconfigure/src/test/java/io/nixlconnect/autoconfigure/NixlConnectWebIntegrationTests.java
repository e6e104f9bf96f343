package io.nixlconnect.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.ReadableOperation;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Import;
import org.springframework.core.ParameterizedTypeReference;
import org.springframework.http.MediaType;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.client.RestClient;

/**
 * A real web server (this context) and a second, web-less application that talk RdmaMetadata over HTTP and
 * move the bytes over the embedded transport; the server's actuator then shows health and metrics.
 */
@SpringBootTest(classes = NixlConnectWebIntegrationTests.ServerApplication.class, webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = {"spring.application.name=server", "nixl.connect.backend=embedded", "management.endpoints.web.exposure.include=health,metrics,prometheus",
                "management.endpoint.health.show-details=always"})
class NixlConnectWebIntegrationTests {

    private static final ParameterizedTypeReference<Map<String, Object>> JSON_OBJECT = new ParameterizedTypeReference<>() {
    };

    @LocalServerPort
    private int port;

    @Autowired
    private TensorController controller;

    private ConfigurableApplicationContext client;
    private RestClient http;

    @BeforeEach
    void startClientApplication() {
        client = new SpringApplicationBuilder(ClientApplication.class).web(WebApplicationType.NONE)
                .properties("spring.application.name=client", "nixl.connect.backend=embedded", "spring.main.banner-mode=off").run();
        http = client.getBean(RestClient.Builder.class).baseUrl("http://127.0.0.1:" + port).build();
    }

    @AfterEach
    void stopClientApplication() {
        client.close();
    }

    @Test
    void healthShowsNixlUpWithDetails() {
        Map<String, Object> health = http.get().uri("/actuator/health").retrieve().body(JSON_OBJECT);
        assertThat(health).extractingByKey("components").asInstanceOf(org.assertj.core.api.InstanceOfAssertFactories.MAP)
                .extractingByKey("nixl").satisfies(nixl -> {
                    Map<?, ?> component = (Map<?, ?>) nixl;
                    assertThat(component.get("status")).isEqualTo("UP");
                    @SuppressWarnings("unchecked")
                    Map<String, Object> details = (Map<String, Object>) component.get("details");
                    assertThat(details.get("backend")).isEqualTo("embedded");
                    assertThat((String) details.get("worker")).matches("server-[0-9a-f]{8}");
                    assertThat(details).containsKeys("agent", "transport", "inFlightOperations", "registeredBytes",
                            "remoteAgents");
                });
    }

    @Test
    void metadataTravelsAsJsonExactlyLikeToJsonAndTransfersShowInMetrics() {
        NixlTransfers transfers = client.getBean(NixlTransfers.class);

        // Server publishes; the response body is byte for byte RdmaMetadata.toJson().
        String published = http.get().uri("/tensors/1024").retrieve().body(String.class);
        ReadableOperation serverSide = controller.lastPublished;
        assertThat(published).isEqualTo(serverSide.metadata().toJson());
        assertThat(transfers.readBytes(RdmaMetadata.fromJson(published))).isEqualTo(TensorController.pattern(1024));
        transfers.await(serverSide);

        // Client publishes and posts its metadata (RestClient + the client's mapper); the server reads it.
        ReadableOperation clientSide = transfers.publish(TensorController.pattern(2048));
        Map<String, Object> pulled = http.post().uri("/pull").contentType(MediaType.APPLICATION_JSON)
                .body(clientSide.metadata()).retrieve().body(JSON_OBJECT);
        assertThat(pulled).containsEntry("bytes", 2048).containsEntry("matches", true);
        transfers.await(clientSide);

        // @RequestBody and a typed response body, both through the applications' own mappers.
        try (ReadableOperation echoed = transfers.publish(new byte[8])) {
            RdmaMetadata metadata = echoed.metadata();
            assertThat(http.post().uri("/echo").contentType(MediaType.APPLICATION_JSON).body(metadata).retrieve()
                    .body(RdmaMetadata.class)).isEqualTo(metadata);
            assertThat(http.post().uri("/echo").contentType(MediaType.APPLICATION_JSON).body(metadata.toJson())
                    .retrieve().body(String.class)).isEqualTo(metadata.toJson());
        }

        assertThat(measurement("nixl.transfer.bytes", "role:passive")).isEqualTo(1024.0);
        assertThat(measurement("nixl.transfer.bytes", "role:active")).isEqualTo(2048.0);
        assertThat(measurement("nixl.transfer.bytes", null)).isEqualTo(3072.0);
        assertThat(measurement("nixl.transfer", "outcome:complete")).isEqualTo(2.0);
        assertThat(measurement("nixl.operations.active", null)).isZero();

        // Prometheus (the server: it published one buffer and read one): each operation is one timing series
        // (nixl_transfer_seconds); nothing else times or counts it.
        String scrape = http.get().uri("/actuator/prometheus").retrieve().body(String.class);
        java.util.List<String> nixlSeries = scrape.lines().filter(line -> line.startsWith("nixl_")).toList();
        // path: the direct copy where the OS allows it between the two connectors, TCP otherwise; both sides the same.
        assertThat(nixlSeries.stream().filter(line -> line.startsWith("nixl_transfer_seconds_count{"))
                .map(line -> line.replaceAll("path=\"(cross-memory-attach|tcp)\"", "path=\"P\""))).containsExactlyInAnyOrder(
                "nixl_transfer_seconds_count{backend=\"embedded\",device=\"cpu\",error=\"none\",kind=\"read\",name=\"nixlConnector\",outcome=\"complete\",path=\"P\",plugin=\"tcp\",role=\"active\"} 1",
                "nixl_transfer_seconds_count{backend=\"embedded\",device=\"cpu\",error=\"none\",kind=\"read\",name=\"nixlConnector\",outcome=\"complete\",path=\"P\",plugin=\"none\",role=\"passive\"} 1");
        assertThat(nixlSeries).allSatisfy(line -> assertThat(line).matches(
                "nixl_(transfer_seconds|transfer_active_seconds|transfer_bytes_total|operations_active|memory_registered_bytes|remote_agents"
                        + "|connections_open|peers_evicted_total|peers_reconnected_total|peers_departed_total"
                        + "|connections_idle_closed_total)(_count|_sum|_max)?[{ ].*"));
    }

    /** The first measurement (COUNT for counters, timers; VALUE for gauges) of a meter on the server. */
    private double measurement(String meter, String tag) {
        String uri = "/actuator/metrics/" + meter + (tag == null ? "" : "?tag=" + tag);
        Map<String, Object> body = http.get().uri(uri).retrieve().body(JSON_OBJECT);
        Map<?, ?> first = (Map<?, ?>) ((List<?>) body.get("measurements")).get(0);
        return ((Number) first.get("value")).doubleValue();
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(TensorController.class)
    static class ServerApplication {
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class ClientApplication {
    }

    @RestController
    static class TensorController {

        private final NixlTransfers transfers;
        volatile ReadableOperation lastPublished;

        TensorController(NixlTransfers transfers) {
            this.transfers = transfers;
        }

        static byte[] pattern(int size) {
            byte[] bytes = new byte[size];
            for (int i = 0; i < size; i++) {
                bytes[i] = (byte) (i * 31 + 7);
            }
            return bytes;
        }

        @GetMapping("/tensors/{size}")
        RdmaMetadata publish(@PathVariable int size) {
            lastPublished = transfers.publish(pattern(size));
            return lastPublished.metadata();
        }

        @PostMapping("/pull")
        Map<String, Object> pull(@RequestBody RdmaMetadata metadata) {
            byte[] bytes = transfers.readBytes(metadata);
            return Map.of("bytes", bytes.length, "matches", Arrays.equals(bytes, pattern(bytes.length)));
        }

        @PostMapping("/echo")
        RdmaMetadata echo(@RequestBody RdmaMetadata metadata) {
            return metadata;
        }
    }
}
