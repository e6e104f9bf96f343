package io.nixlconnect.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistryAssert;
import io.nixlconnect.Connector;
import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.Descriptor;
import io.nixlconnect.OperationStatus;
import io.nixlconnect.ReadOperation;
import io.nixlconnect.ReadableOperation;
import io.nixlconnect.TransferException;
import io.nixlconnect.TransportBackend;
import java.time.Duration;
import org.assertj.core.api.InstanceOfAssertFactories;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.autoconfigure.contributor.HealthContributorAutoConfiguration;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

class NixlConnectObservabilityTests {

    private final ApplicationContextRunner runner = new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(
            NixlConnectAutoConfiguration.class, NixlConnectHealthAutoConfiguration.class,
            NixlConnectMetricsAutoConfiguration.class, NixlConnectObservationAutoConfiguration.class,
            HealthContributorAutoConfiguration.class, MetricsAutoConfiguration.class,
            CompositeMeterRegistryAutoConfiguration.class, SimpleMetricsExportAutoConfiguration.class))
            // The peer below is embedded; 'auto' would pick NIXL where it loads (CI), and the two could not talk.
            .withPropertyValues("nixl.connect.backend=embedded");

    /** The other worker: a plain core connector, as a peer process would have. */
    private final Connector peer = new Connector(ConnectorOptions.builder().workerId("peer")
            .backend(TransportBackend.EMBEDDED).build());

    @AfterEach
    void closePeer() {
        peer.close();
    }

    @Test
    void integrationsAreOnWhenTheirModulesArePresent() {
        runner.run(context -> assertThat(context).hasBean("nixlHealthIndicator")
                .hasSingleBean(NixlConnectMetrics.class).doesNotHaveBean(NixlConnectObservations.class));
    }

    @Test
    void disabledTurnsOffTheIntegrationsToo() {
        runner.withBean(TestObservationRegistry.class, TestObservationRegistry::create)
                .withPropertyValues("nixl.connect.enabled=false").run(context -> assertThat(context)
                        .doesNotHaveBean("nixlHealthIndicator").doesNotHaveBean(NixlConnectMetrics.class)
                        .doesNotHaveBean(NixlConnectObservations.class).doesNotHaveBean(Connector.class));
    }

    @Test
    void healthIndicatorCanBeSwitchedOff() {
        runner.withPropertyValues("management.health.nixl.enabled=false")
                .run(context -> assertThat(context).doesNotHaveBean("nixlHealthIndicator"));
    }

    @Test
    void withoutMicrometerOrHealthOnTheClassPathOnlyTheConnectorIsConfigured() {
        new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(NixlConnectAutoConfiguration.class,
                        NixlConnectHealthAutoConfiguration.class, NixlConnectMetricsAutoConfiguration.class,
                        NixlConnectObservationAutoConfiguration.class))
                .withClassLoader(new FilteredClassLoader(MeterRegistry.class, ObservationRegistry.class,
                        org.springframework.boot.health.contributor.HealthIndicator.class))
                .run(context -> assertThat(context).hasSingleBean(Connector.class)
                        .doesNotHaveBean("nixlHealthIndicator").doesNotHaveBean(NixlConnectMetrics.class)
                        .doesNotHaveBean(NixlConnectObservations.class));
    }

    @Test
    void userDefinedIntegrationBeansWin() {
        runner.withUserConfiguration(UserIntegrations.class).run(context -> {
            assertThat(context.getBeanNamesForType(NixlConnectMetrics.class)).containsExactly("myMetrics");
            assertThat(context.getBean("nixlHealthIndicator")).isInstanceOf(FixedHealth.class);
        });
    }

    @Test
    void healthIsUpWithDetailsWhileServingAndDownWithTheReasonAfter() {
        runner.withPropertyValues("nixl.connect.worker-id=healthy", "nixl.connect.backend=embedded").run(context -> {
            NixlConnectHealthIndicator indicator = context.getBean("nixlHealthIndicator", NixlConnectHealthIndicator.class);
            Health health = indicator.health(true);
            assertThat(health.getStatus()).isEqualTo(Status.UP);
            assertThat(health.getDetails()).containsEntry("worker", "healthy").containsEntry("backend", "embedded")
                    .containsEntry("agent", "healthy-1").containsEntry("inFlightOperations", 0)
                    .containsEntry("registeredBytes", 0L).containsEntry("remoteAgents", 0)
                    .doesNotContainKey("reason");
            assertThat(health.getDetails().get("transport")).asInstanceOf(InstanceOfAssertFactories.MAP)
                    .containsKey("endpoint");

            Connector connector = context.getBean(Connector.class);
            Descriptor buffer = Descriptor.allocate(64);
            ReadableOperation waiting = connector.createReadable(buffer);
            assertThat(indicator.health(true).getDetails()).containsEntry("inFlightOperations", 1)
                    .containsEntry("registeredBytes", 64L);
            Thread shutdown = new Thread(() -> connector.shutdown(Duration.ofSeconds(5)));
            shutdown.start();
            awaitUntil(() -> !connector.isAccepting());
            Health draining = indicator.health(true);
            assertThat(draining.getStatus()).isEqualTo(Status.DOWN);
            assertThat(draining.getDetails()).containsEntry("reason", "shutting down");
            waiting.close();
            shutdown.join(5000);
            Health closed = indicator.health(true);
            assertThat(closed.getStatus()).isEqualTo(Status.DOWN);
            assertThat(closed.getDetails()).containsEntry("reason", "closed");
            buffer.close();
        });
    }

    @Test
    void completedTransfersAreCountedAndTimedByKindRoleAndDevice() {
        runner.run(context -> {
            MeterRegistry registry = context.getBean(MeterRegistry.class);
            NixlTransfers transfers = context.getBean(NixlTransfers.class);
            ReadableOperation published = transfers.publish(new byte[1000]);
            assertThat(registry.get("nixl.operations.active").gauge().value()).isEqualTo(1.0);
            assertThat(registry.get("nixl.memory.registered").gauge().value()).isEqualTo(1000.0);
            readFromPeer(published);
            transfers.await(published);

            assertThat(registry.get("nixl.transfer.bytes").tags("kind", "read", "role", "passive", "device", "cpu")
                    .counter().count()).isEqualTo(1000.0);
            assertThat(registry.get("nixl.operations").tags("kind", "read", "role", "passive", "device", "cpu",
                    "outcome", "complete").counter().count()).isEqualTo(1.0);
            assertThat(registry.get("nixl.operation.duration").tags("outcome", "complete").timer().count()).isEqualTo(1);
            assertThat(registry.find("nixl.errors").counters()).isEmpty();
            assertThat(registry.get("nixl.operations.active").gauge().value()).isZero();
            assertThat(registry.get("nixl.memory.registered").gauge().value()).isZero();
        });
    }

    @Test
    void activeSideIsTaggedActive() {
        runner.run(context -> {
            MeterRegistry registry = context.getBean(MeterRegistry.class);
            try (Descriptor source = new Descriptor(new byte[] {1, 2, 3, 4});
                 ReadableOperation readable = peer.createReadable(source)) {
                byte[] read = context.getBean(NixlTransfers.class).readBytes(readable.metadata());
                assertThat(read).containsExactly(1, 2, 3, 4);
                readable.waitForCompletion(Duration.ofSeconds(10));
            }
            assertThat(registry.get("nixl.transfer.bytes").tags("role", "active", "kind", "read").counter().count())
                    .isEqualTo(4.0);
            assertThat(registry.get("nixl.remote.agents").gauge().value()).isGreaterThanOrEqualTo(0.0);
        });
    }

    @Test
    void timeoutsAreErrorsTaggedWithTheCauseAndCancellationsAreNot() {
        runner.withPropertyValues("nixl.connect.passive-timeout=100ms").run(context -> {
            MeterRegistry registry = context.getBean(MeterRegistry.class);
            NixlTransfers transfers = context.getBean(NixlTransfers.class);
            ReadableOperation abandoned = transfers.publish(new byte[8]);
            assertThatThrownBy(() -> transfers.await(abandoned)).isInstanceOf(TransferException.class);
            assertThat(abandoned.status()).isEqualTo(OperationStatus.ERRORED);
            ReadableOperation cancelled = transfers.publish(new byte[8]);
            cancelled.close();

            assertThat(registry.get("nixl.operations").tags("outcome", "timeout").counter().count()).isEqualTo(1.0);
            assertThat(registry.get("nixl.operations").tags("outcome", "cancelled").counter().count()).isEqualTo(1.0);
            assertThat(registry.get("nixl.errors").tags("cause", "TransferTimeoutException", "role", "passive")
                    .counter().count()).isEqualTo(1.0);
            assertThat(registry.find("nixl.errors").counters()).hasSize(1);
            assertThat(registry.find("nixl.transfer.bytes").counters()).isEmpty();
        });
    }

    @Test
    void durationPercentilesFollowBootsDistributionProperties() {
        runner.withPropertyValues("management.metrics.distribution.percentiles.nixl.operation.duration=0.5,0.99").run(context -> {
            MeterRegistry registry = context.getBean(MeterRegistry.class);
            context.getBean(NixlTransfers.class).publish(new byte[8]).close();
            var snapshot = registry.get("nixl.operation.duration").timer().takeSnapshot();
            assertThat(snapshot.percentileValues()).hasSize(2);
        });
    }

    @Test
    void eachOperationIsAnObservationWithLowCardinalityTags() {
        runner.withBean(TestObservationRegistry.class, TestObservationRegistry::create).run(context -> {
            TestObservationRegistry observations = context.getBean(TestObservationRegistry.class);
            NixlTransfers transfers = context.getBean(NixlTransfers.class);
            ReadableOperation published = transfers.publish(new byte[16]);
            readFromPeer(published);
            transfers.await(published);
            transfers.publish(new byte[16]).close();

            TestObservationRegistryAssert.assertThat(observations)
                    .hasNumberOfObservationsWithNameEqualTo("nixl.transfer", 2)
                    .forAllObservationsWithNameEqualTo("nixl.transfer", observation -> observation
                            .hasLowCardinalityKeyValue("kind", "read").hasLowCardinalityKeyValue("role", "passive")
                            .hasLowCardinalityKeyValue("device", "cpu").hasHighCardinalityKeyValue("nixl.bytes", "16")
                            .hasLowCardinalityKeyValue("backend", "none")) // the passive side does not learn the path
                    .hasHandledContextsThatSatisfy(contexts -> assertThat(contexts)
                            .extracting(c -> c.getLowCardinalityKeyValue("outcome").getValue())
                            .containsExactly("complete", "cancelled"))
                    .hasObservationWithNameEqualTo("nixl.transfer").that().hasBeenStarted().hasBeenStopped();
        });
    }

    @Test
    void anActiveOperationsObservationSaysWhichBackendMovedTheBytes() {
        runner.withBean(TestObservationRegistry.class, TestObservationRegistry::create).run(context -> {
            TestObservationRegistry observations = context.getBean(TestObservationRegistry.class);
            try (Descriptor source = new Descriptor(new byte[] {1, 2, 3, 4});
                 ReadableOperation readable = peer.createReadable(source)) {
                context.getBean(NixlTransfers.class).readBytes(readable.metadata());
                readable.waitForCompletion(Duration.ofSeconds(10));
            }
            TestObservationRegistryAssert.assertThat(observations)
                    .hasObservationWithNameEqualTo("nixl.transfer").that()
                    .hasLowCardinalityKeyValue("role", "active").hasLowCardinalityKeyValue("backend", "tcp");
        });
    }

    @Test
    void failedOperationsRecordTheErrorOnTheObservation() {
        runner.withBean(TestObservationRegistry.class, TestObservationRegistry::create)
                .withPropertyValues("nixl.connect.passive-timeout=50ms").run(context -> {
            TestObservationRegistry observations = context.getBean(TestObservationRegistry.class);
            NixlTransfers transfers = context.getBean(NixlTransfers.class);
            ReadableOperation abandoned = transfers.publish(new byte[8]);
            assertThatThrownBy(() -> transfers.await(abandoned)).isInstanceOf(TransferException.class);
            TestObservationRegistryAssert.assertThat(observations).hasSingleObservationThat()
                    .hasNameEqualTo("nixl.transfer").hasLowCardinalityKeyValue("outcome", "timeout").hasError();
        });
    }

    private void readFromPeer(ReadableOperation published) {
        try (Descriptor target = Descriptor.allocate(published.totalBytes());
             ReadOperation read = peer.beginRead(published.metadata(), target)) {
            read.waitForCompletion(Duration.ofSeconds(10));
        }
    }

    private static void awaitUntil(java.util.function.BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime()).as("condition within 5s").isLessThan(deadline);
            Thread.sleep(5);
        }
    }

    static final class FixedHealth implements org.springframework.boot.health.contributor.HealthIndicator {

        @Override
        public Health health() {
            return Health.up().build();
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class UserIntegrations {

        @Bean
        NixlConnectMetrics myMetrics(Connector connector) {
            return new NixlConnectMetrics(connector, new SimpleMeterRegistry());
        }

        @Bean
        FixedHealth nixlHealthIndicator() {
            return new FixedHealth();
        }
    }
}
