package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;

import io.nixlconnect.cuda.Cuda;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The Java equivalents of Python's {@code Connector.hostname}, {@code is_cuda_available} and {@code __eq__}. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ConnectorIdentityTest {

    private static Connector connector(String workerId) {
        return new Connector(ConnectorOptions.builder().workerId(workerId).transports(EmbeddedSettings.defaults()).build());
    }

    @Test
    void hostnameIsWhatTheHostnameCommandPrints() throws IOException, InterruptedException {
        Process hostname = new ProcessBuilder("hostname").redirectErrorStream(true).start();
        String printed = new String(hostname.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        assertThat(hostname.waitFor(10, TimeUnit.SECONDS)).isTrue();
        try (Connector connector = connector("w")) {
            assertThat(connector.hostname()).isEqualTo(printed).isNotBlank();
        }
    }

    @Test
    void connectorsOfOneWorkerIdAreTheSameWorkerButNotEqualObjects() {
        try (Connector first = connector("worker-a"); Connector second = connector("worker-a");
                Connector other = connector("worker-b")) {
            assertThat(first.sameWorker(second)).isTrue();
            assertThat(second.sameWorker(first)).isTrue();
            assertThat(first.sameWorker(other)).isFalse();
            assertThat(first.sameWorker(null)).isFalse();
            Set<Connector> set = new HashSet<>(Set.of(first, second));
            assertThat(set).as("equals stays identity: two agents are two connectors").hasSize(2);
        }
    }

    @Test
    void cudaAvailabilityIsTheCudaServicesAnswer() {
        try (Connector connector = connector("w")) {
            assertThat(connector.isCudaAvailable()).isEqualTo(Cuda.isAvailable());
        }
    }
}
