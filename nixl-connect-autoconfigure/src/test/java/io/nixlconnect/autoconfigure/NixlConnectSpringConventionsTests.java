package io.nixlconnect.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import io.nixlconnect.Connector;
import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.ReadableOperation;
import io.nixlconnect.SerializedDescriptor;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import io.nixlconnect.autoconfigure.health.NixlConnectHealthAutoConfiguration;
import io.nixlconnect.autoconfigure.health.NixlConnectHealthIndicator;
import io.nixlconnect.autoconfigure.observation.NixlConnectMeterBinder;
import io.nixlconnect.autoconfigure.observation.NixlConnectMetricsAutoConfiguration;
import io.nixlconnect.autoconfigure.observation.NixlConnectObservationAutoConfiguration;
import io.nixlconnect.autoconfigure.observation.NixlTransferObservations;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.predicate.RuntimeHintsPredicates;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.autoconfigure.contributor.HealthContributorAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration;
import org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.annotation.Order;

/** Behaviour a Spring Boot user expects of any starter: back-off, customizers, lifecycle, AOT hints. */
@ExtendWith(OutputCaptureExtension.class)
class NixlConnectSpringConventionsTests {

    private final ApplicationContextRunner runner = new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(
                    NixlConnectAutoConfiguration.class, NixlConnectHealthAutoConfiguration.class,
                    NixlConnectMetricsAutoConfiguration.class, NixlConnectObservationAutoConfiguration.class,
                    HealthContributorAutoConfiguration.class, MetricsAutoConfiguration.class,
                    CompositeMeterRegistryAutoConfiguration.class, SimpleMetricsExportAutoConfiguration.class,
                    ObservationAutoConfiguration.class))
            .withPropertyValues("nixl.connect.backend=embedded");

    @Test
    void twoUserConnectorsStartAndTheSingleConnectorBeansBackOff() {
        runner.withUserConfiguration(TwoConnectors.class).run(context -> assertThat(context).hasNotFailed()
                .getBeans(Connector.class).hasSize(2));
        // NixlTransfers and the lifecycle need one connector; health, meters and observations cover each
        // (NixlConnectMultipleConnectorsTests)
        runner.withUserConfiguration(TwoConnectors.class).run(context -> assertThat(context)
                .doesNotHaveBean(NixlTransfers.class).doesNotHaveBean(NixlConnectorLifecycle.class)
                .hasBean("nixlHealthContributor").hasSingleBean(NixlConnectMeterBinder.class)
                .hasSingleBean(NixlTransferObservations.class));
    }

    @Test
    void customizersChangeOneOptionInOrderAndKeepTheRestFromProperties() {
        runner.withPropertyValues("nixl.connect.worker-id=custom", "nixl.connect.operation-timeout=3s")
                .withUserConfiguration(Customizers.class).run(context -> {
                    ConnectorOptions options = context.getBean(Connector.class).options();
                    assertThat(options.operationTimeout()).isEqualTo(Duration.ofSeconds(7)); // @Order(2) ran last
                    assertThat(options.maxInFlightOperations()).isEqualTo(17);
                    assertThat(options.workerId()).isEqualTo("custom");
                });
    }

    @Test
    void stopWithACallbackDrainsOffTheCallersThreadAndLogsOneLinePerEvent(CapturedOutput output) {
        runner.withPropertyValues("nixl.connect.shutdown.grace-period=10s").run(context -> {
            NixlConnectorLifecycle lifecycle = context.getBean(NixlConnectorLifecycle.class);
            ReadableOperation waiting = context.getBean(NixlTransfers.class).publish(new byte[8]);
            CountDownLatch stopped = new CountDownLatch(1);
            lifecycle.stop(stopped::countDown);
            // Returned while an operation is in flight: Boot's phase timeout, not this call, bounds the wait.
            assertThat(stopped.getCount()).isEqualTo(1);
            assertThat(lifecycle.isRunning()).isFalse();
            waiting.close();
            assertThat(stopped.await(10, TimeUnit.SECONDS)).isTrue();
            assertThat(context.getBean(Connector.class).isServing()).isFalse();
        });
        assertThat(output.getOut().lines().filter(line -> line.contains("Stopping Connector"))).hasSize(1);
        assertThat(output.getOut().lines().filter(line -> line.contains("Stopped Connector")
                && line.contains("every operation ended"))).hasSize(1);
    }

    @Test
    void runtimeHintsCoverJacksonBodiesAndJna() throws Exception {
        RuntimeHints hints = new RuntimeHints();
        new NixlConnectRuntimeHints().registerHints(hints, getClass().getClassLoader());
        assertThat(RuntimeHintsPredicates.reflection().onType(RdmaMetadata.class)).accepts(hints);
        assertThat(RuntimeHintsPredicates.reflection().onType(SerializedDescriptor.class)).accepts(hints);
        assertThat(RuntimeHintsPredicates.resource().forResource(NixlConnectRuntimeHints.JNA_DISPATCH_LIBRARY))
                .accepts(hints);
        // The resource and the types named by string exist, so a rename cannot leave a stale hint.
        assertThat(Connector.class.getClassLoader().getResource(NixlConnectRuntimeHints.JNA_DISPATCH_LIBRARY)).isNotNull();
        Class<?> capi = Class.forName("io.nixlconnect.transport.nixl.NixlCapi");
        Class<?> libc = Class.forName("io.nixlconnect.transport.nixl.NixlNativeLibrary$LibC");
        assertThat(RuntimeHintsPredicates.reflection().onType(capi)).accepts(hints);
        assertThat(RuntimeHintsPredicates.proxies().forInterfaces(libc)).accepts(hints);
    }

    @Configuration(proxyBeanMethods = false)
    static class TwoConnectors {

        @Bean(destroyMethod = "close")
        Connector first() {
            return new Connector(ConnectorOptions.builder().workerId("first").transports(EmbeddedSettings.defaults()).build());
        }

        @Bean(destroyMethod = "close")
        Connector second() {
            return new Connector(ConnectorOptions.builder().workerId("second").transports(EmbeddedSettings.defaults()).build());
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class Customizers {

        @Bean
        @Order(2)
        ConnectorOptionsCustomizer later() {
            return options -> options.operationTimeout(Duration.ofSeconds(7));
        }

        @Bean
        @Order(1)
        ConnectorOptionsCustomizer earlier() {
            return options -> options.operationTimeout(Duration.ofSeconds(5)).maxInFlightOperations(17);
        }
    }
}
