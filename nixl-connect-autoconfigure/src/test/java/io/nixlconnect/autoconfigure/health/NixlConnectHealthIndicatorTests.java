package io.nixlconnect.autoconfigure.health;

import static org.assertj.core.api.Assertions.assertThat;

import io.nixlconnect.Connector;
import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import io.nixlconnect.cuda.Cuda;
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
    void withoutJCudaHealthLeavesCudaOut() {
        assertThat(new NixlConnectHealthIndicator(connector, false).health(true).getDetails())
                .doesNotContainKey("cudaDevices").containsKey("inFlightOperations");
        // This module's tests have no JCuda: the public constructor detects that.
        assertThat(new NixlConnectHealthIndicator(connector).health(true).getDetails()).doesNotContainKey("cudaDevices");
    }
}
