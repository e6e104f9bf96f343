package io.nixlconnect.starter;

import static org.assertj.core.api.Assertions.assertThat;

import io.nixlconnect.Connector;
import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.OperationStatus;
import io.nixlconnect.ReadableOperation;
import io.nixlconnect.autoconfigure.NixlTransfers;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.ApplicationContext;

/** Only the starter (and the test starter) on the class path, no configuration: a working connector. */
@SpringBootTest(classes = NixlConnectStarterTests.Application.class)
class NixlConnectStarterTests {

    @Autowired
    private Connector connector;

    @Autowired
    private NixlTransfers transfers;

    @Autowired
    private ApplicationContext context;

    @Test
    void zeroConfigurationGivesAServingConnectorThatMovesBytes() {
        assertThat(connector.isServing()).isTrue();
        // backend 'auto': NIXL where its library loads (CI fetches one), the embedded transport elsewhere.
        assertThat(connector.backendName()).isIn("embedded", "nixl");
        assertThat(connector.options().transport(EmbeddedSettings.class).orElseThrow().bindAddress()).isEqualTo("127.0.0.1");
        // No actuator or Micrometer here: the optional integrations stay out of the way.
        assertThat(context.containsBean("nixlHealthContributor")).isFalse();
        assertThat(context.containsBean("nixlConnectMeterBinder")).isFalse();

        // The peer chooses the way the starter did ('auto'), so both ends speak the same transport.
        try (Connector peer = new Connector(ConnectorOptions.builder().workerId("starter-peer").build())) {
            ReadableOperation published = transfers.publish(new byte[] {10, 20, 30});
            byte[] read = new NixlTransfers(peer, connector.options().operationTimeout()).readBytes(published.metadata());
            assertThat(read).containsExactly(10, 20, 30);
            assertThat(transfers.await(published).status()).isEqualTo(OperationStatus.COMPLETE);
        }
    }

    /** The starter brings the Dynamo module; its runtime waits for nixl.connect.dynamo.enabled=true. */
    @Test
    void theDynamoIntegrationComesWithTheStarterAndStaysOffUntilEnabled() {
        assertThat(io.nixlconnect.dynamo.DynamoRuntime.SUPPORTED_VERSION).isEqualTo("1.6.x");
        assertThat(context.getBeanNamesForType(io.nixlconnect.dynamo.DynamoRuntime.class)).isEmpty();
        assertThat(context.getBeanNamesForType(
                io.nixlconnect.autoconfigure.dynamo.DynamoRuntimeLifecycle.class)).isEmpty();
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class Application {
    }
}
