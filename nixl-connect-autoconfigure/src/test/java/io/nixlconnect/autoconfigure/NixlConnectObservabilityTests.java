package io.nixlconnect.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.MeterRegistry;
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
import io.nixlconnect.autoconfigure.health.NixlConnectHealthAutoConfiguration;
import io.nixlconnect.autoconfigure.health.NixlConnectHealthIndicator;
import io.nixlconnect.autoconfigure.observation.DefaultNixlTransferObservationConvention;
import io.nixlconnect.autoconfigure.observation.NixlConnectMeterBinder;
import io.nixlconnect.autoconfigure.observation.NixlConnectMetricsAutoConfiguration;
import io.nixlconnect.autoconfigure.observation.NixlConnectObservationAutoConfiguration;
import io.nixlconnect.autoconfigure.observation.NixlTransferContext;
import io.nixlconnect.autoconfigure.observation.NixlTransferObservationConvention;
import io.nixlconnect.autoconfigure.observation.NixlTransferObservations;
import io.micrometer.common.KeyValues;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import java.time.Duration;
import java.util.function.BooleanSupplier;
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
import org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

class NixlConnectObservabilityTests {

    private final ApplicationContextRunner runner = new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(
            NixlConnectAutoConfiguration.class, NixlConnectHealthAutoConfiguration.class,
            NixlConnectMetricsAutoConfiguration.class, NixlConnectObservationAutoConfiguration.class,
            HealthContributorAutoConfiguration.class, MetricsAutoConfiguration.class,
            CompositeMeterRegistryAutoConfiguration.class, SimpleMetricsExportAutoConfiguration.class,
            ObservationAutoConfiguration.class))
            // The peer below is embedded; 'auto' would pick NIXL where it loads (CI), and the two could not talk.
            .withPropertyValues("nixl.connect.backend=embedded");

    /** The other worker: a plain core connector, as a peer process would have. */
    private final Connector peer = new Connector(ConnectorOptions.builder().workerId("peer")
            .transports(EmbeddedSettings.defaults()).build());

    @AfterEach
    void closePeer() {
        peer.close();
    }

    @Test
    void integrationsAreOnWhenTheirModulesArePresent() {
        runner.run(context -> assertThat(context).hasBean("nixlHealthContributor")
                .hasSingleBean(NixlConnectMeterBinder.class).hasSingleBean(NixlTransferObservations.class));
    }

    @Test
    void disabledTurnsOffTheIntegrationsToo() {
        runner.withBean(TestObservationRegistry.class, TestObservationRegistry::create)
                .withPropertyValues("nixl.connect.enabled=false").run(context -> assertThat(context)
                        .doesNotHaveBean("nixlHealthContributor").doesNotHaveBean(NixlConnectMeterBinder.class)
                        .doesNotHaveBean(NixlTransferObservations.class).doesNotHaveBean(Connector.class));
    }

    @Test
    void healthIsOutOfServiceAtTheInFlightLimitAndUpAgainBelowIt() {
        runner.withPropertyValues("nixl.connect.limits.max-in-flight-operations=2").run(context -> {
            NixlConnectHealthIndicator indicator = context.getBean("nixlHealthContributor", NixlConnectHealthIndicator.class);
            NixlTransfers transfers = context.getBean(NixlTransfers.class);
            ReadableOperation first = transfers.publish(new byte[8]);
            assertThat(indicator.health(true).getStatus()).isEqualTo(Status.UP);
            ReadableOperation second = transfers.publish(new byte[8]);
            Health full = indicator.health(true);
            assertThat(full.getStatus()).isEqualTo(Status.OUT_OF_SERVICE);
            assertThat(full.getDetails()).containsEntry("inFlightOperations", 2).containsEntry("maxInFlightOperations", 2)
                    .containsEntry("reason", "at capacity: 2 of at most 2 operations in flight "
                            + "(nixl.connect.limits.max-in-flight-operations)");
            second.close();
            assertThat(indicator.health(true).getStatus()).isEqualTo(Status.UP);
            first.close();
        });
    }

    @Test
    void healthIndicatorCanBeSwitchedOff() {
        runner.withPropertyValues("management.health.nixl.enabled=false")
                .run(context -> assertThat(context).doesNotHaveBean("nixlHealthContributor"));
    }

    @Test
    void withoutMicrometerOrHealthOnTheClassPathOnlyTheConnectorIsConfigured() {
        new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(NixlConnectAutoConfiguration.class,
                        NixlConnectHealthAutoConfiguration.class, NixlConnectMetricsAutoConfiguration.class,
                        NixlConnectObservationAutoConfiguration.class))
                .withClassLoader(new FilteredClassLoader(MeterRegistry.class, ObservationRegistry.class,
                        org.springframework.boot.health.contributor.HealthIndicator.class))
                .run(context -> assertThat(context).hasSingleBean(Connector.class)
                        .doesNotHaveBean("nixlHealthContributor").doesNotHaveBean(NixlConnectMeterBinder.class)
                        .doesNotHaveBean(NixlTransferObservations.class));
    }

    @Test
    void userDefinedIntegrationBeansWin() {
        runner.withUserConfiguration(UserIntegrations.class).run(context -> {
            assertThat(context.getBeanNamesForType(NixlConnectMeterBinder.class)).containsExactly("myMetrics");
            assertThat(context.getBean("nixlHealthIndicator")).isInstanceOf(FixedHealth.class);
        });
    }

    @Test
    void healthIsUpWithDetailsWhileServingAndDownWithTheReasonAfter() {
        runner.withPropertyValues("nixl.connect.worker-id=healthy", "nixl.connect.backend=embedded").run(context -> {
            NixlConnectHealthIndicator indicator = context.getBean("nixlHealthContributor", NixlConnectHealthIndicator.class);
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
    void completedTransfersAreTimedOnceAndTheirBytesCountedByKindRoleAndDevice() {
        runner.run(context -> {
            MeterRegistry registry = context.getBean(MeterRegistry.class);
            NixlTransfers transfers = context.getBean(NixlTransfers.class);
            ReadableOperation published = transfers.publish(new byte[1000]);
            assertThat(registry.get("nixl.operations.active").gauge().value()).isEqualTo(1.0);
            assertThat(registry.get("nixl.memory.registered").gauge().value()).isEqualTo(1000.0);
            assertThat(registry.get("nixl.transfer.active").longTaskTimer().activeTasks()).isEqualTo(1);
            readFromPeer(published);
            transfers.await(published);

            assertThat(registry.get("nixl.transfer.bytes").tags("kind", "read", "role", "passive", "device", "cpu")
                    .counter().count()).isEqualTo(1000.0);
            assertThat(registry.get("nixl.transfer").tags("kind", "read", "role", "passive", "device", "cpu",
                    "backend", "embedded", "outcome", "complete", "plugin", "none", "error", "none").timer().count())
                    .isEqualTo(1);
            // One timing series per operation: the peer's read is not this registry's, so exactly one timer.
            assertThat(registry.find("nixl.transfer").timers()).hasSize(1);
            assertThat(registry.get("nixl.operations.active").gauge().value()).isZero();
            assertThat(registry.get("nixl.memory.registered").gauge().value()).isZero();
            assertThat(registry.get("nixl.transfer.active").longTaskTimer().activeTasks()).isZero();
        });
    }

    @Test
    void meterNamesAreExactlyThoseDocumentedInObservabilityMd() throws Exception {
        String doc = java.nio.file.Files.readString(java.nio.file.Path.of("../docs/observability.md"));
        java.util.Set<String> documented = new java.util.TreeSet<>();
        java.util.regex.Matcher row = java.util.regex.Pattern.compile("(?m)^\\| `(nixl\\.[a-z.]+)` \\| (counter|gauge|timer|long-task timer)")
                .matcher(doc);
        while (row.find()) {
            if (!row.group(1).startsWith("nixl.dynamo.")) { // the Dynamo integration's: NixlDynamoDocsTests
                documented.add(row.group(1));
            }
        }
        runner.run(context -> {
            MeterRegistry registry = context.getBean(MeterRegistry.class);
            NixlTransfers transfers = context.getBean(NixlTransfers.class);
            ReadableOperation published = transfers.publish(new byte[8]);
            readFromPeer(published);
            transfers.await(published);
            java.util.Set<String> registered = new java.util.TreeSet<>();
            registry.getMeters().stream().map(meter -> meter.getId().getName())
                    .filter(name -> name.startsWith("nixl.")).forEach(registered::add);
            assertThat(registered).isEqualTo(documented);
            // and each meter's tag keys are those the page lists for it
            for (var meter : registry.getMeters()) {
                String name = meter.getId().getName();
                if (!name.startsWith("nixl.")) {
                    continue;
                }
                java.util.regex.Matcher tags = java.util.regex.Pattern.compile("(?m)^\\| `" + java.util.regex.Pattern.quote(name)
                        + "` \\| [^|]+ \\| ([^|]*) \\|").matcher(doc);
                assertThat(tags.find()).as("row of %s", name).isTrue();
                java.util.Set<String> documentedTags = new java.util.TreeSet<>();
                for (String tag : tags.group(1).split(",")) {
                    String trimmed = tag.trim().replace("`", "");
                    if (!trimmed.isEmpty() && !trimmed.equals("–")) {
                        documentedTags.add(trimmed);
                    }
                }
                java.util.Set<String> actualTags = new java.util.TreeSet<>();
                meter.getId().getTags().forEach(tag -> actualTags.add(tag.getKey()));
                assertThat(actualTags).as("tags of %s", name).isEqualTo(documentedTags);
            }
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
            assertThat(registry.get("nixl.transfer.bytes").tags("role", "active", "kind", "read", "device", "cpu").counter().count())
                    .isEqualTo(4.0);
            assertThat(registry.get("nixl.transfer").tags("role", "active", "outcome", "complete").timer().count())
                    .isEqualTo(1);
            assertThat(registry.get("nixl.remote.agents").gauge().value()).isEqualTo(1.0);
            assertThat(registry.get("nixl.connections.open").gauge().value()).isPositive();
            assertThat(registry.get("nixl.peers.evicted").functionCounter().count()).isZero();
            assertThat(registry.get("nixl.peers.reconnected").functionCounter().count()).isZero();
            assertThat(registry.get("nixl.peers.departed").functionCounter().count()).isZero();
            assertThat(registry.get("nixl.connections.idle.closed").functionCounter().count()).isZero();
        });
    }

    @Test
    void timeoutsCarryTheErrorTypeAndCancellationsAreNotErrors() {
        runner.withPropertyValues("nixl.connect.passive-timeout=100ms").run(context -> {
            MeterRegistry registry = context.getBean(MeterRegistry.class);
            NixlTransfers transfers = context.getBean(NixlTransfers.class);
            ReadableOperation abandoned = transfers.publish(new byte[8]);
            assertThatThrownBy(() -> transfers.await(abandoned)).isInstanceOf(TransferException.class);
            assertThat(abandoned.status()).isEqualTo(OperationStatus.ERRORED);
            ReadableOperation cancelled = transfers.publish(new byte[8]);
            cancelled.close();

            // The observation stops in the operation's end listener, which may run after the waiter saw the end.
            await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
                assertThat(registry.find("nixl.transfer").tags("outcome", "timeout", "error", "TransferTimeoutException")
                        .timers()).singleElement().satisfies(timer -> assertThat(timer.count()).isEqualTo(1));
                assertThat(registry.find("nixl.transfer").tags("outcome", "cancelled", "error", "none").timers())
                        .singleElement().satisfies(timer -> assertThat(timer.count()).isEqualTo(1));
            });
            assertThat(registry.find("nixl.transfer.bytes").counters()).allSatisfy(c -> assertThat(c.count()).isZero());
        });
    }

    @Test
    void durationPercentilesFollowBootsDistributionProperties() {
        runner.withPropertyValues("management.metrics.distribution.percentiles.nixl.transfer=0.5,0.99").run(context -> {
            MeterRegistry registry = context.getBean(MeterRegistry.class);
            context.getBean(NixlTransfers.class).publish(new byte[8]).close();
            var snapshot = registry.get("nixl.transfer").timer().takeSnapshot();
            assertThat(snapshot.percentileValues()).hasSize(2);
        });
    }

    @Test
    void aConventionBeanReplacesTheDefaultNamesAndTags() {
        runner.withBean(NixlTransferObservationConvention.class, () -> new DefaultNixlTransferObservationConvention() {
            @Override
            public KeyValues getLowCardinalityKeyValues(NixlTransferContext context) {
                return super.getLowCardinalityKeyValues(context).and("tenant", "blue");
            }
        }).run(context -> {
            MeterRegistry registry = context.getBean(MeterRegistry.class);
            context.getBean(NixlTransfers.class).publish(new byte[8]).close();
            assertThat(registry.get("nixl.transfer").tags("tenant", "blue", "outcome", "cancelled").timer().count())
                    .isEqualTo(1);
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
            assertThat(published.transferPath()).isIn("cross-memory-attach", "tcp"); // a peer in this JVM, embedded

            TestObservationRegistryAssert.assertThat(observations)
                    .hasNumberOfObservationsWithNameEqualTo("nixl.transfer", 2)
                    .forAllObservationsWithNameEqualTo("nixl.transfer", observation -> observation
                            .hasLowCardinalityKeyValue("kind", "read").hasLowCardinalityKeyValue("role", "passive")
                            .hasLowCardinalityKeyValue("device", "cpu").hasLowCardinalityKeyValue("backend", "embedded")
                            .hasLowCardinalityKeyValue("plugin", "none") // the passive side does not learn the path
                            .hasHighCardinalityKeyValue("nixl.bytes", "16"))
                    .hasHandledContextsThatSatisfy(contexts -> assertThat(contexts)
                            .extracting(c -> c.getLowCardinalityKeyValue("outcome").getValue())
                            .containsExactly("complete", "cancelled"))
                    .hasHandledContextsThatSatisfy(contexts -> assertThat(contexts)
                            .extracting(c -> c.getLowCardinalityKeyValue("path").getValue())
                            .containsExactly(published.transferPath(), "none"))
                    .hasObservationWithNameEqualTo("nixl.transfer").that().hasBeenStarted().hasBeenStopped();
        });
    }

    @Test
    void observationsCarryTheNotificationKeysFingerprintNeverTheKey() {
        runner.withBean(TestObservationRegistry.class, TestObservationRegistry::create).run(context -> {
            TestObservationRegistry observations = context.getBean(TestObservationRegistry.class);
            NixlTransfers transfers = context.getBean(NixlTransfers.class);
            ReadableOperation published = transfers.publish(new byte[16]);
            readFromPeer(published);
            transfers.await(published);
            String key = published.notificationKey();

            TestObservationRegistryAssert.assertThat(observations)
                    .hasObservationWithNameEqualTo("nixl.transfer").that()
                    .hasHighCardinalityKeyValue("nixl.notification_key.fingerprint",
                            published.notificationKeyFingerprint())
                    .doesNotHaveHighCardinalityKeyValueWithKey("nixl.notification_key");
            // Exported spans carry every key value: the key (the embedded transport's credential) is in none.
            TestObservationRegistryAssert.assertThat(observations)
                    .hasHandledContextsThatSatisfy(contexts -> assertThat(contexts).allSatisfy(c -> assertThat(
                            c.getAllKeyValues().stream().map(keyValue -> keyValue.getValue())).noneMatch(
                                    value -> value.contains(key))));
        });
    }

    @Test
    void anActiveOperationsObservationSaysWhichPluginMovedTheBytes() {
        runner.withBean(TestObservationRegistry.class, TestObservationRegistry::create).run(context -> {
            TestObservationRegistry observations = context.getBean(TestObservationRegistry.class);
            try (Descriptor source = new Descriptor(new byte[] {1, 2, 3, 4});
                 ReadableOperation readable = peer.createReadable(source)) {
                context.getBean(NixlTransfers.class).readBytes(readable.metadata());
                readable.waitForCompletion(Duration.ofSeconds(10));
            }
            TestObservationRegistryAssert.assertThat(observations)
                    .hasObservationWithNameEqualTo("nixl.transfer").that()
                    .hasLowCardinalityKeyValue("role", "active").hasLowCardinalityKeyValue("backend", "embedded")
                    .hasLowCardinalityKeyValue("plugin", "tcp");
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

    private static void awaitUntil(BooleanSupplier condition) {
        await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(5)).until(condition::getAsBoolean);
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
        NixlConnectMeterBinder myMetrics(Connector connector) {
            return new NixlConnectMeterBinder(connector);
        }

        @Bean
        FixedHealth nixlHealthIndicator() {
            return new FixedHealth();
        }
    }
}
