package io.nixlconnect.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.MeterRegistry;
import io.nixlconnect.Connector;
import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.Descriptor;
import io.nixlconnect.ReadableOperation;
import io.nixlconnect.autoconfigure.health.NixlConnectHealthAutoConfiguration;
import io.nixlconnect.autoconfigure.health.NixlConnectHealthIndicator;
import io.nixlconnect.autoconfigure.observation.NixlConnectMeterBinder;
import io.nixlconnect.autoconfigure.observation.NixlConnectMetricsAutoConfiguration;
import io.nixlconnect.autoconfigure.observation.NixlConnectObservationAutoConfiguration;
import io.nixlconnect.autoconfigure.observation.NixlTransferObservations;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.autoconfigure.contributor.HealthContributorAutoConfiguration;
import org.springframework.boot.health.contributor.CompositeHealthContributor;
import org.springframework.boot.health.contributor.HealthContributors;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration;
import org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Two Connector beans, as Boot treats two DataSources: a health contributor per connector under {@code nixl}, and
 * meters and observations per connector, tagged {@code name} with the bean name.
 */
class NixlConnectMultipleConnectorsTests {

    private final ApplicationContextRunner runner = new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(
                    NixlConnectAutoConfiguration.class, NixlConnectHealthAutoConfiguration.class,
                    NixlConnectMetricsAutoConfiguration.class, NixlConnectObservationAutoConfiguration.class,
                    HealthContributorAutoConfiguration.class, MetricsAutoConfiguration.class,
                    CompositeMeterRegistryAutoConfiguration.class, SimpleMetricsExportAutoConfiguration.class,
                    ObservationAutoConfiguration.class))
            .withPropertyValues("nixl.connect.backend=embedded");

    @Test
    void eachConnectorHasItsOwnHealthUnderNixlNamedByBean() {
        runner.withUserConfiguration(TwoConnectors.class).run(context -> {
            assertThat(context.getBean("nixlHealthContributor")).isInstanceOf(CompositeHealthContributor.class);
            HealthContributors nixl = context.getBean("nixlHealthContributor", CompositeHealthContributor.class);
            assertThat(nixl.stream().map(HealthContributors.Entry::name)).containsExactlyInAnyOrder("prefill", "decode");
            NixlConnectHealthIndicator prefill = (NixlConnectHealthIndicator) nixl.getContributor("prefill");
            NixlConnectHealthIndicator decode = (NixlConnectHealthIndicator) nixl.getContributor("decode");
            assertThat(prefill.health(true).getDetails()).containsEntry("worker", "prefill-worker");
            assertThat(decode.health(true).getDetails()).containsEntry("worker", "decode-worker");

            // each reports its own connector: closing one turns only that one DOWN
            context.getBean("decode", Connector.class).close();
            assertThat(decode.health(true).getStatus()).isEqualTo(Status.DOWN);
            assertThat(prefill.health(true).getStatus()).isEqualTo(Status.UP);
        });
    }

    @Test
    void eachConnectorHasItsOwnMetersTaggedByBeanName() {
        runner.withUserConfiguration(TwoConnectors.class).run(context -> {
            assertThat(context).hasSingleBean(NixlConnectMeterBinder.class).hasSingleBean(NixlTransferObservations.class);
            MeterRegistry registry = context.getBean(MeterRegistry.class);
            Connector prefill = context.getBean("prefill", Connector.class);
            Connector decode = context.getBean("decode", Connector.class);

            try (Descriptor source = Descriptor.allocate(1000);
                 ReadableOperation published = prefill.createReadable(source)) {
                assertThat(gauge(registry, "nixl.operations.active", "prefill")).isEqualTo(1.0);
                assertThat(gauge(registry, "nixl.memory.registered", "prefill")).isEqualTo(1000.0);
                assertThat(gauge(registry, "nixl.operations.active", "decode")).isZero();
                try (Descriptor target = Descriptor.allocate(1000)) {
                    decode.read(published.metadata(), target);
                }
                published.waitForCompletion(Duration.ofSeconds(10));
            }

            assertThat(registry.get("nixl.transfer.bytes").tags("name", "prefill", "kind", "read", "role", "passive", "device", "cpu").counter().count())
                    .isEqualTo(1000.0);
            assertThat(registry.get("nixl.transfer.bytes").tags("name", "decode", "kind", "read", "role", "active", "device", "cpu").counter().count())
                    .isEqualTo(1000.0);
            assertThat(registry.get("nixl.transfer.bytes").tags("name", "decode", "kind", "read", "role", "passive", "device", "cpu").counter().count())
                    .isZero();
            // the timings of the one observation, per connector as well
            assertThat(registry.get("nixl.transfer").tags("name", "prefill", "role", "passive", "outcome", "complete")
                    .timer().count()).isEqualTo(1);
            assertThat(registry.get("nixl.transfer").tags("name", "decode", "role", "active", "outcome", "complete")
                    .timer().count()).isEqualTo(1);
        });
    }

    @Test
    void theAutoConfiguredConnectorIsTaggedByItsBeanNameToo() {
        runner.run(context -> {
            MeterRegistry registry = context.getBean(MeterRegistry.class);
            assertThat(registry.get("nixl.operations.active").tag("name", "nixlConnector").gauge().value()).isZero();
            assertThat(context.getBean("nixlHealthContributor")).isInstanceOf(NixlConnectHealthIndicator.class);
        });
    }

    private static double gauge(MeterRegistry registry, String name, String connector) {
        return registry.get(name).tag("name", connector).gauge().value();
    }

    @Configuration(proxyBeanMethods = false)
    static class TwoConnectors {

        @Bean(destroyMethod = "close")
        Connector prefill() {
            return new Connector(ConnectorOptions.builder().workerId("prefill-worker")
                    .transports(EmbeddedSettings.defaults()).build());
        }

        @Bean(destroyMethod = "close")
        Connector decode() {
            return new Connector(ConnectorOptions.builder().workerId("decode-worker")
                    .transports(EmbeddedSettings.defaults()).build());
        }
    }
}
