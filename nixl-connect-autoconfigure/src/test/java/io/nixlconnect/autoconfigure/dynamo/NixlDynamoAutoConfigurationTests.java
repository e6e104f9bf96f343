package io.nixlconnect.autoconfigure.dynamo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import io.nixlconnect.Connector;
import io.nixlconnect.autoconfigure.NixlConnectAutoConfiguration;
import io.nixlconnect.autoconfigure.NixlConnectorLifecycle;
import io.nixlconnect.dynamo.DiscoveryBackend;
import io.nixlconnect.dynamo.DynamoClient;
import io.nixlconnect.dynamo.DynamoHandler;
import io.nixlconnect.dynamo.DynamoRefusedException;
import io.nixlconnect.dynamo.DynamoRuntime;
import io.nixlconnect.dynamo.DynamoSettings;
import io.nixlconnect.dynamo.DynamoWorkerException;
import io.nixlconnect.dynamo.EndpointId;
import io.nixlconnect.dynamo.ResponseStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.autoconfigure.contributor.HealthContributorAutoConfiguration;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration;
import org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The Dynamo integration in application contexts: off unless asked for; a runtime from the environment and the
 * properties; endpoint beans served and deregistered; health, meters and observations; and the shutdown order
 * (deregister, drain, then the connector), Java calling Java over file discovery in a temporary directory.
 */
class NixlDynamoAutoConfigurationTests {

    @TempDir
    Path kv;

    private final ApplicationContextRunner plain = new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(
            NixlConnectAutoConfiguration.class, NixlDynamoAutoConfiguration.class,
            NixlDynamoObservabilityAutoConfiguration.class,
            HealthContributorAutoConfiguration.class, MetricsAutoConfiguration.class,
            CompositeMeterRegistryAutoConfiguration.class, SimpleMetricsExportAutoConfiguration.class,
            ObservationAutoConfiguration.class))
            .withPropertyValues("nixl.connect.backend=embedded");

    /** Enabled, on file discovery in this test's directory, loopback only. */
    private ApplicationContextRunner runner() {
        return plain.withPropertyValues("nixl.connect.dynamo.enabled=true",
                "nixl.connect.dynamo.discovery-backend=file", "nixl.connect.dynamo.file-kv-directory=" + kv,
                "nixl.connect.dynamo.rpc-host=127.0.0.1", "nixl.connect.dynamo.shutdown-grace=10s");
    }

    /** A caller outside Spring, on the same discovery directory. */
    private DynamoRuntime caller() {
        return DynamoRuntime.start(DynamoSettings.builder().discoveryBackend(DiscoveryBackend.FILE).fileKvDirectory(kv)
                .rpcHost("127.0.0.1").responseStreamHost("127.0.0.1").build());
    }

    private List<Path> discoveryFiles() throws Exception {
        Path instances = kv.resolve("v1").resolve("instances");
        if (!Files.isDirectory(instances)) {
            return List.of();
        }
        try (Stream<Path> files = Files.list(instances)) {
            return files.filter(file -> !file.getFileName().toString().startsWith(".")).toList();
        }
    }

    @Test
    void offUnlessEnabled() {
        plain.withPropertyValues("DYN_DISCOVERY_BACKEND=file", "DYN_FILE_KV=" + kv).run(context -> assertThat(context)
                .hasNotFailed().doesNotHaveBean(DynamoRuntime.class).doesNotHaveBean(DynamoRuntimeLifecycle.class)
                .doesNotHaveBean("dynamoHealthContributor").doesNotHaveBean(DynamoMeterBinder.class)
                .doesNotHaveBean(DynamoObservations.class).doesNotHaveBean(NixlDynamoProperties.class));
    }

    @Test
    void withoutTheDynamoModuleTheRestStartsAsBefore() {
        plain.withClassLoader(new FilteredClassLoader(DynamoRuntime.class))
                .withPropertyValues("nixl.connect.dynamo.enabled=true")
                .run(context -> assertThat(context).hasNotFailed().hasSingleBean(Connector.class)
                        .doesNotHaveBean(DynamoRuntimeLifecycle.class));
    }

    @Test
    void theRuntimeReadsDynamosVariablesAndPropertiesOverrideThem() {
        plain.withPropertyValues("nixl.connect.dynamo.enabled=true", "DYN_DISCOVERY_BACKEND=file", "DYN_FILE_KV=" + kv,
                        "DYN_TCP_RPC_HOST=127.0.0.1", "DYN_REQUEST_PLANE_CODEC=json",
                        "nixl.connect.dynamo.served-codec=msgpack", "nixl.connect.dynamo.max-concurrent-requests=3")
                .run(context -> {
                    DynamoSettings settings = context.getBean(DynamoRuntime.class).settings();
                    assertThat(settings.discoveryBackend()).isEqualTo(DiscoveryBackend.FILE);
                    assertThat(settings.fileKvDirectory()).isEqualTo(kv);
                    assertThat(settings.rpcHost()).isEqualTo("127.0.0.1");
                    assertThat(settings.responseStreamHost()).isEqualTo("127.0.0.1");
                    assertThat(settings.servedCodec().wireName()).isEqualTo("msgpack");
                    assertThat(settings.maxConcurrentRequests()).isEqualTo(3);
                });
    }

    @Test
    void aRefusedValueStopsStartUpNamingIt() {
        runner().withPropertyValues("nixl.connect.dynamo.max-concurrent-requests=0").run(context -> assertThat(context)
                .hasFailed().getFailure().rootCause().hasMessageContaining("maxConcurrentRequests must be >= 1"));
        runner().withPropertyValues("DYN_REQUEST_PLANE=nats").run(context -> assertThat(context).hasFailed()
                .getFailure().rootCause().hasMessageContaining("DYN_REQUEST_PLANE=nats"));
    }

    @Test
    void theApplicationsOwnRuntimeWins() {
        runner().withBean("myRuntime", DynamoRuntime.class, this::caller).run(context -> {
            assertThat(context).hasSingleBean(DynamoRuntime.class).hasSingleBean(DynamoRuntimeLifecycle.class);
            assertThat(context.getBean(DynamoRuntime.class).settings().fileKvDirectory()).isEqualTo(kv);
            assertThat(context).getBean("myRuntime").isSameAs(context.getBean(DynamoRuntime.class));
        });
    }

    @Configuration(proxyBeanMethods = false)
    static class Echo {

        @Bean
        DynamoEndpointRegistration echo(ObservationRegistry observations) {
            return DynamoEndpointRegistration.of("demo.spring.echo", (request, responder) -> {
                if ("fail".equals(request.payload())) {
                    throw new IllegalStateException("asked to fail");
                }
                var current = observations.getCurrentObservation();
                responder.send(Map.of("echo", request.payload(), "observation",
                        current == null ? "none" : current.getContext().getName()));
            });
        }
    }

    @Test
    void javaCallsASpringEndpointOverFileDiscoveryAndBothSidesAreMeasured() throws Exception {
        runner().withUserConfiguration(Echo.class).run(worker -> {
            assertThat(worker).hasNotFailed();
            assertThat(discoveryFiles()).hasSize(1);
            // The caller is a Spring application too, with nothing to serve.
            runner().run(callerContext -> {
                DynamoRuntime caller = callerContext.getBean(DynamoRuntime.class);
                DynamoClient client = caller.client("demo.spring.echo");
                client.waitForInstances(Duration.ofSeconds(10));
                assertThat(client.call("hello").readAll()).singleElement().satisfies(response -> assertThat(response
                        .data()).isEqualTo(Map.of("echo", "hello", "observation", DynamoObservations.REQUEST)));
                assertThatThrownBy(() -> client.call("fail").readAll()).isInstanceOf(DynamoWorkerException.class)
                        .hasMessageContaining("IllegalStateException: asked to fail");

                MeterRegistry calls = callerContext.getBean(MeterRegistry.class);
                await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
                    assertThat(calls.get(DynamoObservations.CALL).tags("endpoint", "demo.spring.echo", "outcome",
                            "success", "error", "none").timer().count()).isEqualTo(1);
                    assertThat(calls.get(DynamoObservations.CALL).tags("endpoint", "demo.spring.echo", "outcome",
                            "error", "error", "DynamoWorkerException").timer().count()).isEqualTo(1);
                    assertThat(calls.get(DynamoMeterBinder.CALLS_ACTIVE).tags("endpoint", "demo.spring.echo").gauge()
                            .value()).isZero();
                });
            });
            MeterRegistry served = worker.getBean(MeterRegistry.class);
            await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
                assertThat(served.get(DynamoObservations.REQUEST).tags("endpoint", "demo.spring.echo", "outcome",
                        "success", "error", "none").timer().count()).isEqualTo(1);
                assertThat(served.get(DynamoObservations.REQUEST).tags("endpoint", "demo.spring.echo", "outcome",
                        "error", "error", "IllegalStateException").timer().count()).isEqualTo(1);
                assertThat(served.get(DynamoMeterBinder.REQUESTS_ACTIVE).tags("endpoint", "demo.spring.echo").gauge()
                        .value()).isZero();
            });
            Health health = worker.getBean("dynamoHealthContributor", HealthIndicator.class).health(true);
            assertThat(health.getStatus()).isEqualTo(Status.UP);
            assertThat(health.getDetails()).containsEntry("discovery", "file " + kv).containsEntry("discoveryHealthy", true);
            assertThat(health.getDetails().get("endpoints")).asList().singleElement().asString()
                    .contains("endpoint=demo.spring.echo", "registered=true", "inFlight=0");
        });
        // Closing the context deregistered the endpoint.
        assertThat(discoveryFiles()).isEmpty();
    }

    @Configuration(proxyBeanMethods = false)
    static class Nested {

        /** Every observation stopped, in order. */
        static final List<io.micrometer.observation.Observation.Context> stopped =
                new java.util.concurrent.CopyOnWriteArrayList<>();

        @Bean
        ObservationRegistry observationRegistry() {
            ObservationRegistry registry = ObservationRegistry.create();
            registry.observationConfig().observationHandler(new io.micrometer.observation.ObservationHandler<>() {
                @Override
                public boolean supportsContext(io.micrometer.observation.Observation.Context context) {
                    return true;
                }

                @Override
                public void onStop(io.micrometer.observation.Observation.Context context) {
                    stopped.add(context);
                }
            });
            return registry;
        }

        @Bean
        DynamoEndpointRegistration inner() {
            return DynamoEndpointRegistration.of("demo.spring.inner", DynamoHandler.unary(request -> "inner"));
        }

        /** Calls the inner endpoint from its handler: through the application's own runtime. */
        @Bean
        DynamoEndpointRegistration outer(org.springframework.beans.factory.ObjectProvider<DynamoRuntime> runtime) {
            return DynamoEndpointRegistration.of("demo.spring.outer", (request, responder) -> {
                DynamoClient inner = runtime.getObject().client("demo.spring.inner");
                inner.waitForInstances(Duration.ofSeconds(10));
                responder.send(inner.call("from outer").readAll().get(0).data());
                inner.close();
            });
        }
    }

    @Test
    void callsAreObservationsChildrenOfTheCallersAndAHandlersCallsAreChildrenOfItsRequest() {
        runner().withUserConfiguration(Nested.class).run(context -> {
            ObservationRegistry observations = context.getBean(ObservationRegistry.class);
            DynamoClient outer = context.getBean(DynamoRuntime.class).client("demo.spring.outer");
            outer.waitForInstances(Duration.ofSeconds(10));
            io.micrometer.observation.Observation.createNotStarted("test.caller", observations).observe(() ->
                    assertThat(outer.call("go").readAll().get(0).data()).isEqualTo("inner"));
            await().atMost(Duration.ofSeconds(10)).until(() -> Nested.stopped.size() == 5);
            Map<String, String> parents = new java.util.TreeMap<>();
            for (var observedContext : Nested.stopped) {
                String endpoint = observedContext.getLowCardinalityKeyValue("endpoint") == null ? ""
                        : " " + observedContext.getLowCardinalityKeyValue("endpoint").getValue();
                var parent = observedContext.getParentObservation();
                parents.put(observedContext.getName() + endpoint, parent == null ? "none"
                        : parent.getContextView().getName() + (parent.getContextView()
                        .getLowCardinalityKeyValue("endpoint") == null ? "" : " " + parent.getContextView()
                        .getLowCardinalityKeyValue("endpoint").getValue()));
            }
            assertThat(parents).containsExactlyInAnyOrderEntriesOf(Map.of(
                    "test.caller", "none",
                    "nixl.dynamo.call demo.spring.outer", "test.caller",
                    "nixl.dynamo.request demo.spring.outer", "none",
                    "nixl.dynamo.call demo.spring.inner", "nixl.dynamo.request demo.spring.outer",
                    "nixl.dynamo.request demo.spring.inner", "none"));
        });
    }

    @Configuration(proxyBeanMethods = false)
    static class OneAtATime {

        static final CountDownLatch release = new CountDownLatch(1);

        @Bean
        DynamoEndpointRegistration held() {
            return DynamoEndpointRegistration.of("demo.spring.held", (request, responder) -> {
                responder.send("started");
                release.await(30, TimeUnit.SECONDS);
            });
        }
    }

    @Test
    void refusalsAreCountedPerEndpointAndReason() {
        runner().withUserConfiguration(OneAtATime.class).withPropertyValues("nixl.connect.dynamo.max-concurrent-requests=1")
                .run(worker -> {
                    try (DynamoRuntime caller = caller()) {
                        DynamoClient client = caller.client("demo.spring.held");
                        client.waitForInstances(Duration.ofSeconds(10));
                        ResponseStream held = client.call("a");
                        assertThat(held.read().data()).isEqualTo("started");
                        assertThatThrownBy(() -> client.call("b")).isInstanceOf(DynamoRefusedException.class);
                        MeterRegistry registry = worker.getBean(MeterRegistry.class);
                        assertThat(registry.get(DynamoMeterBinder.REQUESTS_REFUSED).tags("endpoint", "demo.spring.held",
                                "reason", "overloaded").counter().count()).isEqualTo(1);
                        assertThat(registry.get(DynamoMeterBinder.REQUESTS_ACTIVE).tags("endpoint", "demo.spring.held")
                                .gauge().value()).isEqualTo(1);
                        OneAtATime.release.countDown();
                        assertThat(held.readAll()).isEmpty();
                    }
                });
    }

    @Test
    void healthIsDownWhileDiscoveryCannotBeWrittenAndUpAgainAfter() throws Exception {
        runner().withUserConfiguration(Echo.class).withPropertyValues("nixl.connect.dynamo.file-kv-ttl=1s").run(worker -> {
            HealthIndicator health = worker.getBean("dynamoHealthContributor", HealthIndicator.class);
            assertThat(health.health().getStatus()).isEqualTo(Status.UP);
            // The directory gone and a file in its way: the keep-alive can neither touch nor re-publish the record.
            Path v1 = kv.resolve("v1");
            org.springframework.util.FileSystemUtils.deleteRecursively(v1);
            Files.writeString(v1, "in the way");
            await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
                Health down = health.health(true);
                assertThat(down.getStatus()).isEqualTo(Status.DOWN);
                assertThat(down.getDetails()).containsEntry("discoveryHealthy", false).extractingByKey("reason")
                        .asString().contains("discovery directory");
            });
            Files.delete(v1);
            Files.createDirectories(kv.resolve("v1").resolve("instances"));
            await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(health.health().getStatus())
                    .isEqualTo(Status.UP));
            assertThat(discoveryFiles()).hasSize(1); // re-published
            assertThat(worker.getBean(MeterRegistry.class).get(DynamoMeterBinder.DISCOVERY_ERRORS).functionCounter()
                    .count()).isPositive();
        });
    }

    @Configuration(proxyBeanMethods = false)
    static class UsesTheConnector {

        static final CountDownLatch entered = new CountDownLatch(1);
        static final CountDownLatch release = new CountDownLatch(1);

        @Bean
        DynamoEndpointRegistration transfer(Connector connector) {
            return DynamoEndpointRegistration.of("demo.spring.transfer", (request, responder) -> {
                entered.countDown();
                release.await(30, TimeUnit.SECONDS);
                // After the release, the shutdown has deregistered this endpoint and is draining: the connector a
                // handler transfers through must still be open.
                try (var readable = connector.createReadable(io.nixlconnect.Descriptor.allocate(16))) {
                    responder.send(Map.of("accepting", connector.isAccepting(), "metadata",
                            readable.metadata().toJson().length() > 0));
                }
            });
        }
    }

    @Test
    void shutdownDeregistersThenDrainsThenClosesTheConnector() throws Exception {
        ConfigurableApplicationContext[] holder = new ConfigurableApplicationContext[1];
        runner().withUserConfiguration(UsesTheConnector.class).run(worker -> {
            holder[0] = worker;
            assertThat(worker.getBean(DynamoRuntimeLifecycle.class).getPhase())
                    .isGreaterThan(worker.getBean(NixlConnectorLifecycle.class).getPhase());
            Connector connector = worker.getBean(Connector.class);
            try (DynamoRuntime caller = caller()) {
                DynamoClient client = caller.client("demo.spring.transfer");
                client.waitForInstances(Duration.ofSeconds(10));
                CompletableFuture<ResponseStream> call = client.callAsync("go");
                assertThat(UsesTheConnector.entered.await(10, TimeUnit.SECONDS)).isTrue();
                ResponseStream stream = call.get(10, TimeUnit.SECONDS);

                CompletableFuture<Void> closing = CompletableFuture.runAsync(worker::close);
                // 1. Deregistered: callers stop routing here, while the request is still running.
                await().atMost(Duration.ofSeconds(10)).until(() -> client.instances().isEmpty());
                assertThat(discoveryFiles()).isEmpty();
                assertThat(closing).isNotDone();
                assertThat(connector.isAccepting()).isTrue();
                // 2. Drained: the request finishes with the connector still open.
                UsesTheConnector.release.countDown();
                assertThat(stream.readAll()).singleElement().satisfies(response -> assertThat(response.data())
                        .isEqualTo(Map.of("accepting", true, "metadata", true)));
                // 3. Then the connector closes.
                closing.get(30, TimeUnit.SECONDS);
                assertThat(connector.isAccepting()).isFalse();
            }
        });
        assertThat(holder[0].isActive()).isFalse();
    }
}
