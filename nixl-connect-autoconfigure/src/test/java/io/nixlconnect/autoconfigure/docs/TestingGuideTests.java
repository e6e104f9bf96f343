package io.nixlconnect.autoconfigure.docs;

import static org.assertj.core.api.Assertions.assertThat;

import io.nixlconnect.Connector;
import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.Descriptor;
import io.nixlconnect.ReadableOperation;
import io.nixlconnect.autoconfigure.ConnectorOptionsCustomizer;
import io.nixlconnect.autoconfigure.NixlConnectAutoConfiguration;
import io.nixlconnect.autoconfigure.NixlTransfers;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * The snippets of docs/testing.md, "A second worker in the test" and "Your configuration and beans", as the page
 * shows them (only their imports, which the page lists, are here once): if one stops compiling or passing, the page
 * is wrong.
 */
class TestingGuideTests {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(NixlConnectAutoConfiguration.class))
            .withPropertyValues("nixl.connect.backend=embedded");

    @Test
    void myCustomizerSetsTheOperationTimeout() {
        runner.withBean(ConnectorOptionsCustomizer.class, () -> options -> options.operationTimeout(Duration.ofMinutes(2)))
                .run(context -> assertThat(context.getBean(Connector.class).options().operationTimeout())
                        .isEqualTo(Duration.ofMinutes(2)));
    }

    @Test
    void aBadValueFailsStartUp() {
        runner.withPropertyValues("nixl.connect.embedded.port=70000")
                .run(context -> assertThat(context).hasFailed());
    }

    @Test
    void aSecondWorkerInTheTest() {
        runner.run(context -> {
            NixlTransfers transfers = context.getBean(NixlTransfers.class);
            try (Connector peer = new Connector(ConnectorOptions.builder().workerId("peer")
                    .transports(EmbeddedSettings.defaults()).build());
                 Descriptor source = new Descriptor(new byte[] {1, 2, 3, 4});
                 ReadableOperation readable = peer.createReadable(source)) {
                assertThat(transfers.readBytes(readable.metadata())).containsExactly(1, 2, 3, 4);
                readable.waitForCompletion(Duration.ofSeconds(10));
            }
        });
    }
}
