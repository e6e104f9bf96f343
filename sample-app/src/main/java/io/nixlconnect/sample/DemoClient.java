package io.nixlconnect.sample;

import io.nixlconnect.Connector;
import io.nixlconnect.Descriptor;
import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.ReadOperation;
import io.nixlconnect.WriteOperation;
import io.nixlconnect.autoconfigure.NixlTransfers;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.condition.ConditionalOnExpression;
import org.springframework.core.env.Environment;
import org.springframework.stereotype.Component;
import org.springframework.web.client.RestClient;
import tools.jackson.databind.JsonNode;

/**
 * The consumer: fetches the producer's metadata over HTTP, reads its tensor with a one-sided READ and checks
 * the CRC32C, then writes a tensor of its own into a buffer the producer makes writable and has the producer
 * check it. Finally it asks its own actuator for the {@code nixl} health and the transfer meter. It transfers with
 * {@link ConsumerConnector}'s connector: in the one-process demo a worker of its own beside the producer's.
 */
@Component
@ConditionalOnExpression(DemoClient.CONSUMER_ROLE)
public class DemoClient {

    /** Active for {@code sample.role=consumer} and {@code both}. */
    static final String CONSUMER_ROLE = "'${sample.role:both}'.equalsIgnoreCase('consumer')"
            + " or '${sample.role:both}'.equalsIgnoreCase('both')";

    private static final Logger log = LoggerFactory.getLogger(DemoClient.class);
    private static final long WRITE_SEED = 2;

    private final Connector connector;
    private final NixlTransfers transfers;
    private final TensorMemory memory;
    private final SampleProperties properties;
    private final RestClient.Builder http;
    private final Environment environment;

    public DemoClient(ConsumerConnector consumer, NixlTransfers transfers, TensorMemory memory,
            SampleProperties properties, RestClient.Builder http, Environment environment) {
        this.connector = consumer.connector();
        this.transfers = transfers;
        this.memory = memory;
        this.properties = properties;
        this.http = http;
        this.environment = environment;
    }

    /** Runs the whole flow; failures are reported in the result, never thrown. */
    public DemoResult run() {
        String producerUrl = producerUrl();
        RestClient producer = http.clone().baseUrl(producerUrl).build();
        String name = properties.getTensorName();
        TransferResult read = read(producer, name);
        TransferResult write = write(producer, "upload-" + connector.name(),
                properties.getTensorSize().toBytes());
        String health = "UNKNOWN";
        String endpoint = null;
        Long bytes = null;
        try {
            RestClient self = http.clone().baseUrl(managementUrl()).build();
            JsonNode nixl = self.get().uri("/actuator/health/nixl").retrieve().body(JsonNode.class);
            health = nixl.path("status").asString("UNKNOWN");
            JsonNode endpointNode = nixl.path("details").path("transport").path("endpoint");
            endpoint = endpointNode.isMissingNode() || endpointNode.isNull() ? null : endpointNode.asString();
            JsonNode meter = self.get().uri("/actuator/metrics/nixl.transfer.bytes?tag=role:active")
                    .retrieve()
                    .onStatus(status -> status.value() == 404, (request, response) -> { }) // no transfer completed yet
                    .body(JsonNode.class);
            bytes = meter == null ? 0L : (long) meter.path("measurements").path(0).path("value").asDouble();
        } catch (RuntimeException e) {
            log.warn("Could not query this worker's actuator: {}", e.toString());
        }
        return new DemoResult(connector.name(), connector.backendName(), producerUrl, read,
                write, health, endpoint, bytes);
    }

    /** READ: the producer publishes its tensor for us; we pull it into our own buffer. */
    TransferResult read(RestClient producer, String name) {
        long size = properties.getTensorSize().toBytes();
        try {
            TensorInfo info = producer.get().uri("/tensors/{name}", name).retrieve().body(TensorInfo.class);
            size = info.size();
            String json = producer.get().uri("/tensors/{name}/metadata", name).retrieve().body(String.class);
            RdmaMetadata remote = RdmaMetadata.fromJson(json);
            try (Descriptor local = memory.allocate(remote.totalSize())) {
                long start = System.nanoTime();
                try (ReadOperation read = connector.beginRead(remote, local)) {
                    transfers.await(read);
                }
                Duration took = Duration.ofNanos(System.nanoTime() - start);
                String actual = Checksums.hex(memory.crc32c(local));
                return new TransferResult("READ", remote.totalSize(), took, info.crc32c(), actual, null);
            }
        } catch (RuntimeException e) {
            log.error("READ of '{}' failed: {}", name, e.toString());
            log.debug("READ failure", e);
            return TransferResult.failed("READ", size, e);
        }
    }

    /** WRITE: the producer makes a buffer writable for us; we push our tensor into it; it checks what landed. */
    TransferResult write(RestClient producer, String target, long size) {
        try (Descriptor tensor = memory.allocate(size)) {
            memory.fill(tensor, WRITE_SEED);
            String expected = Checksums.hex(memory.crc32c(tensor));
            String json = producer.post().uri("/tensors/{name}/writable?size={size}", target, size)
                    .retrieve().body(String.class);
            RdmaMetadata remote = RdmaMetadata.fromJson(json);
            long start = System.nanoTime();
            try (WriteOperation write = connector.beginWrite(tensor, remote)) {
                transfers.await(write);
            }
            Duration took = Duration.ofNanos(System.nanoTime() - start);
            WriteReport report = producer.get().uri("/tensors/{name}/checksum", target).retrieve().body(WriteReport.class);
            return new TransferResult("WRITE", size, took, expected, report.crc32c(), null);
        } catch (RuntimeException e) {
            log.error("WRITE into '{}' failed: {}", target, e.toString());
            log.debug("WRITE failure", e);
            return TransferResult.failed("WRITE", size, e);
        }
    }

    /** {@code sample.producer-url}, or this process when unset (role {@code both}). */
    String producerUrl() {
        String url = properties.getProducerUrl();
        if (url != null && !url.isBlank()) {
            return url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
        }
        if (properties.getRole() == SampleProperties.Role.CONSUMER) {
            throw new IllegalStateException("sample.producer-url is required for sample.role=consumer");
        }
        return localUrl("local.server.port");
    }

    private String managementUrl() {
        return localUrl(environment.containsProperty("local.management.port") ? "local.management.port" : "local.server.port");
    }

    private String localUrl(String portProperty) {
        String port = environment.getProperty(portProperty);
        if (port == null) {
            throw new IllegalStateException("The web server has not started (no " + portProperty + ")");
        }
        String address = environment.getProperty("server.address", "127.0.0.1");
        if (address.isBlank() || "0.0.0.0".equals(address) || "::".equals(address)) {
            address = "127.0.0.1";
        }
        if (address.contains(":")) {
            address = "[" + address + "]";
        }
        return "http://" + address + ":" + port;
    }
}
