package io.nixlconnect.autoconfigure.web;

import static org.assertj.core.api.Assertions.assertThat;

import io.nixlconnect.Connector;
import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.ReadableOperation;
import io.nixlconnect.autoconfigure.NixlTransfers;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Import;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.client.RestClient;

/**
 * Through a real server: a consumer endpoint whose producer is gone answers 502 with a problem detail, not the
 * empty 200 it gave when the failure's EOFException cause made Spring take it for a client that went away.
 */
@SpringBootTest(classes = NixlConnectProblemDetailsServerTests.Consumer.class, webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = {"nixl.connect.backend=embedded", "server.address=127.0.0.1"})
class NixlConnectProblemDetailsServerTests {

    @LocalServerPort
    int port;

    @Test
    void aReadFromAProducerThatWentAwayIs502() {
        String metadata;
        try (Connector producer = new Connector(ConnectorOptions.builder().workerId("producer")
                .transports(EmbeddedSettings.defaults()).build())) {
            ReadableOperation readable = producer.createReadable(io.nixlconnect.Descriptor.allocate(1024));
            metadata = readable.metadata().toJson();
        } // the producer is gone before anyone reads

        RestClient http = RestClient.builder().baseUrl("http://127.0.0.1:" + port)
                .defaultStatusHandler(status -> true, (request, response) -> { }).build();
        ResponseEntity<String> answer = http.post().uri("/pull").contentType(MediaType.APPLICATION_JSON).body(metadata)
                .retrieve().toEntity(String.class);
        assertThat(answer.getStatusCode()).isEqualTo(HttpStatus.BAD_GATEWAY);
        assertThat(answer.getHeaders().getContentType()).isEqualTo(MediaType.APPLICATION_PROBLEM_JSON);
        assertThat(answer.getBody()).contains("\"status\":502").contains("\"instance\":\"/pull\"")
                .contains("A transfer with a peer worker failed.");
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(Puller.class)
    static class Consumer {
    }

    @RestController
    static class Puller {

        private final NixlTransfers transfers;

        Puller(NixlTransfers transfers) {
            this.transfers = transfers;
        }

        @PostMapping("/pull")
        int pull(@RequestBody String metadata) {
            return transfers.readBytes(RdmaMetadata.fromJson(metadata)).length;
        }
    }
}
