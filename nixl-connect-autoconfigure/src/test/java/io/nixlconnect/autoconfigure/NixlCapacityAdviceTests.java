package io.nixlconnect.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import io.nixlconnect.ReadableOperation;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Import;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.client.RestClient;

/**
 * docs/configuration.md, "At capacity": with no handler of the application's own, the in-flight limit becomes the
 * starter's 503 problem detail with Retry-After, and health says so.
 */
@SpringBootTest(classes = NixlCapacityAdviceTests.App.class, webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = {"nixl.connect.backend=embedded", "nixl.connect.limits.max-in-flight-operations=1",
                "management.endpoints.web.exposure.include=health", "management.endpoint.health.show-details=always"})
class NixlCapacityAdviceTests {

    @LocalServerPort
    int port;

    @Autowired
    NixlTransfers transfers;

    @Test
    void theInFlightLimitAnswers503WithRetryAfterAndHealthIsOutOfService() {
        RestClient http = RestClient.builder().baseUrl("http://127.0.0.1:" + port)
                .defaultStatusHandler(status -> true, (request, response) -> { }).build();
        try (ReadableOperation holding = transfers.publish(new byte[8])) {
            ResponseEntity<String> refused = http.get().uri("/publish").retrieve().toEntity(String.class);
            assertThat(refused.getStatusCode()).isEqualTo(HttpStatus.SERVICE_UNAVAILABLE);
            assertThat(refused.getHeaders().getFirst(HttpHeaders.RETRY_AFTER)).isEqualTo("1");
            assertThat(refused.getHeaders().getContentType()).isEqualTo(MediaType.APPLICATION_PROBLEM_JSON);
            assertThat(refused.getBody()).contains("\"status\":503");
            assertThat(http.get().uri("/actuator/health/nixl").retrieve().toEntity(String.class).getBody())
                    .contains("\"status\":\"OUT_OF_SERVICE\"");
        }
        assertThat(http.get().uri("/publish").retrieve().toEntity(String.class).getStatusCode()).isEqualTo(HttpStatus.OK);
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(Publisher.class)
    static class App {
    }

    @RestController
    static class Publisher {

        private final NixlTransfers transfers;

        Publisher(NixlTransfers transfers) {
            this.transfers = transfers;
        }

        @GetMapping("/publish")
        String publish() {
            try (ReadableOperation readable = transfers.publish(new byte[8])) {
                return readable.metadata().toJson();
            }
        }
    }
}
