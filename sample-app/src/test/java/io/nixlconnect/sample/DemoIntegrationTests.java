package io.nixlconnect.sample;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nixlconnect.Connector;
import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.autoconfigure.NixlTransfers;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.core.env.Environment;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.client.HttpClientErrorException;
import org.springframework.util.unit.DataSize;
import org.springframework.web.client.RestClient;

/** The demo (role both) end to end in one application, over HTTP and the embedded transport. */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {"sample.tensor-size=8MB", "sample.run-demo=false", "sample.exit-after-demo=false"})
class DemoIntegrationTests {

    private static final long SIZE = 8L << 20;

    @LocalServerPort
    int port;

    @Autowired
    DemoClient demo;

    @Autowired
    Connector connector;

    @Autowired
    NixlTransfers transfers;

    @Autowired
    RestClient.Builder builder;

    RestClient http;

    @BeforeEach
    void client() {
        http = builder.clone().baseUrl("http://127.0.0.1:" + port).build();
    }

    @Test
    void demoReadsAndWritesWithMatchingChecksumsAndReportsHealthAndMetrics() {
        DemoResult result = demo.run();

        assertThat(result.read().ok()).as(result.read().summary()).isTrue();
        assertThat(result.read().bytes()).isEqualTo(SIZE);
        assertThat(result.write().ok()).as(result.write().summary()).isTrue();
        assertThat(result.write().bytes()).isEqualTo(SIZE);
        assertThat(result.health()).isEqualTo("UP");
        assertThat(result.backend()).isEqualTo("embedded");
        // The consumer is a worker of its own beside the producer (NIXL refuses a connector's own metadata).
        assertThat(result.worker()).isEqualTo(connector.name() + "-consumer");
        assertThat(result.endpoint()).startsWith("127.0.0.1:");
        assertThat(result.transferredBytes()).isGreaterThanOrEqualTo(2 * SIZE);
        assertThat(result.ok()).isTrue();
        assertThat(result.lines()).anySatisfy(line -> assertThat(line).startsWith("READ   8 MiB  checksum OK"))
                .anySatisfy(line -> assertThat(line).startsWith("WRITE  8 MiB  checksum OK"))
                .contains("result: OK");
    }

    @Test
    void metadataEndpointServesRdmaMetadataJsonVerbatimAndEachGetIsOneRead() {
        TensorInfo info = http.get().uri("/tensors/demo").retrieve().body(TensorInfo.class);
        assertThat(info).isEqualTo(new TensorInfo("demo", SIZE, "cpu", info.crc32c()));

        ResponseEntity<String> response = http.get().uri("/tensors/demo/metadata").retrieve().toEntity(String.class);
        assertThat(response.getHeaders().getContentType()).isEqualTo(MediaType.APPLICATION_JSON);
        String json = response.getBody();
        RdmaMetadata metadata = RdmaMetadata.fromJson(json);
        assertThat(metadata.toJson()).isEqualTo(json);
        assertThat(metadata.totalSize()).isEqualTo(SIZE);

        byte[] bytes = transfers.readBytes(metadata);
        CRC32C crc = new CRC32C();
        crc.update(bytes);
        assertThat(Checksums.hex(crc.getValue())).isEqualTo(info.crc32c());

        // A second GET publishes a new readable: a different notification key.
        String again = http.get().uri("/tensors/demo/metadata").retrieve().body(String.class);
        assertThat(RdmaMetadata.fromJson(again).notificationKey()).isNotEqualTo(metadata.notificationKey());
        transfers.readBytes(RdmaMetadata.fromJson(again));
    }

    @Test
    void producerRefusesUnknownTensorsAndBadSizes() {
        assertThatThrownBy(() -> http.get().uri("/tensors/nope/metadata").retrieve().body(String.class))
                .isInstanceOfSatisfying(HttpClientErrorException.class,
                        e -> assertThat(e.getStatusCode()).isEqualTo(HttpStatus.NOT_FOUND));
        assertThatThrownBy(() -> http.post().uri("/tensors/x/writable?size=0").retrieve().body(String.class))
                .isInstanceOfSatisfying(HttpClientErrorException.class,
                        e -> assertThat(e.getStatusCode()).isEqualTo(HttpStatus.BAD_REQUEST));
        assertThatThrownBy(() -> http.get().uri("/tensors/never-written/checksum").retrieve().body(String.class))
                .isInstanceOfSatisfying(HttpClientErrorException.class,
                        e -> assertThat(e.getStatusCode()).isEqualTo(HttpStatus.NOT_FOUND));
    }

    @Test
    void unreachableProducerFailsTheDemoWithExitCodeOne(@Autowired TensorMemory memory, @Autowired Environment environment) {
        SampleProperties properties = new SampleProperties();
        properties.setRole(SampleProperties.Role.CONSUMER);
        properties.setProducerUrl("http://127.0.0.1:9");
        properties.setTensorSize(DataSize.ofKilobytes(64));
        DemoRunner runner = new DemoRunner(new DemoClient(ConsumerConnector.shared(connector), transfers, memory, properties, builder, environment), properties);
        runner.run(null);

        DemoResult result = runner.result();
        assertThat(result.ok()).isFalse();
        assertThat(result.read().error()).contains("127.0.0.1:9");
        assertThat(result.write().error()).isNotNull();
        assertThat(result.lines()).contains("result: FAILED");
        assertThat(runner.getExitCode()).isEqualTo(1);
    }

    @Test
    void actuatorShowsNixlHealthWithDetails() {
        String health = http.get().uri("/actuator/health").retrieve().body(String.class);
        assertThat(health).contains("\"nixl\"").contains("\"backend\":\"embedded\"").contains("\"endpoint\"");
    }
}
