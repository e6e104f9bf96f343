package io.nixlconnect.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import io.nixlconnect.Connector;
import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.ReadableOperation;
import io.nixlconnect.transport.TransportSettings;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import io.nixlconnect.transport.nixl.NixlSettings;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

class NixlConnectAutoConfigurationTests {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(NixlConnectAutoConfiguration.class));

    @Test
    void zeroConfigurationGivesAServingConnectorOnLoopback() {
        runner.run(context -> {
            assertThat(context).hasSingleBean(Connector.class).hasSingleBean(NixlTransfers.class)
                    .hasSingleBean(NixlConnectorLifecycle.class);
            Connector connector = context.getBean(Connector.class);
            assertThat(connector.isServing()).isTrue();
            // backend 'auto': NIXL where its library loads (CI fetches one), the embedded transport elsewhere.
            assertThat(connector.backendName()).isIn("embedded", "nixl");
            assertThat(connector.name()).matches("nixl-[0-9a-f]{8}");
            if (connector.backendName().equals("embedded")) {
                assertThat(connector.transportStatus().endpoint()).startsWith("127.0.0.1:");
            }
            assertThat(context.getBean(NixlConnectorLifecycle.class).isRunning()).isTrue();
        });
    }

    @Test
    void workerIdDerivesFromTheApplicationNameAndIsUniquePerContext() {
        ApplicationContextRunner named = runner.withPropertyValues("spring.application.name=prefill");
        named.run(first -> named.run(second -> {
            String a = first.getBean(Connector.class).name();
            String b = second.getBean(Connector.class).name();
            assertThat(a).matches("prefill-[0-9a-f]{8}");
            assertThat(b).matches("prefill-[0-9a-f]{8}").isNotEqualTo(a);
        }));
    }

    @Test
    void disabledMeansNoBeansAtAll() {
        runner.withPropertyValues("nixl.connect.enabled=false").run(context -> assertThat(context)
                .doesNotHaveBean(Connector.class)
                .doesNotHaveBean(NixlTransfers.class)
                .doesNotHaveBean(NixlConnectorLifecycle.class)
                .doesNotHaveBean(NixlConnectProperties.class));
    }

    @Test
    void propertiesBindIncludingDurationsAndDataSizes() {
        runner.withPropertyValues("nixl.connect.worker-id=decode-7", "nixl.connect.backend=embedded",
                "nixl.connect.operation-timeout=2m", "nixl.connect.passive-timeout=45s",
                "nixl.connect.limits.max-in-flight-operations=7", "nixl.connect.limits.max-metadata-size=2MB",
                "nixl.connect.embedded.advertised-address=10.1.2.3", "nixl.connect.embedded.max-connections-per-peer=3",
                "nixl.connect.embedded.same-host-copy=false", "nixl.connect.embedded.tcp-streams=4",
                "nixl.connect.embedded.max-ranges-per-request=4096",
                "nixl.connect.nixl.backends=UCX,GDS", "nixl.connect.nixl.progress-thread=false", "nixl.connect.nixl.progress-thread-delay=250us",
                "nixl.connect.nixl.backend-parameters.num_threads=4", "nixl.connect.nixl.library-path=/opt/nixl/lib",
                "nixl.connect.nixl.drain-limit=750ms", "nixl.connect.nixl.max-kept-memory=256MB",
                "nixl.connect.nixl.max-loaded-peers=100", "nixl.connect.nixl.peer-idle-limit=5m",
                "nixl.connect.nixl.ucx-log-file=/var/log/app/ucx-%p.log", "nixl.connect.nixl.warm-up=false",
                "nixl.connect.cuda.device-id=3", "nixl.connect.cuda.required=false",
                "nixl.connect.shutdown.grace-period=1500ms").run(context -> {
            ConnectorOptions options = context.getBean(Connector.class).options();
            assertThat(options.workerId()).isEqualTo("decode-7");
            assertThat(options.transports()).singleElement().isInstanceOf(EmbeddedSettings.class);
            assertThat(options.operationTimeout()).isEqualTo(Duration.ofMinutes(2));
            assertThat(options.passiveTimeout()).isEqualTo(Duration.ofSeconds(45));
            assertThat(options.maxInFlightOperations()).isEqualTo(7);
            assertThat(options.maxMetadataSize()).isEqualTo(2 * 1024 * 1024);
            EmbeddedSettings embedded = options.transport(EmbeddedSettings.class).orElseThrow();
            assertThat(embedded.advertisedAddress()).isEqualTo("10.1.2.3");
            assertThat(embedded.maxConnectionsPerPeer()).isEqualTo(3);
            assertThat(embedded.sameHostCopy()).isFalse();
            assertThat(embedded.tcpStreams()).isEqualTo(4);
            assertThat(embedded.maxRangesPerRequest()).isEqualTo(4096);
            NixlConnectProperties properties = context.getBean(NixlConnectProperties.class);
            // backend=embedded leaves NIXL out of the list; its settings map all the same.
            NixlSettings nixl = NixlConnectorFactory.nixl(properties.getNixl());
            assertThat(nixl.backends()).containsExactly("UCX", "GDS");
            assertThat(nixl.drainLimit()).isEqualTo(Duration.ofMillis(750));
            assertThat(nixl.maxKeptBytes()).isEqualTo(256L << 20);
            assertThat(nixl.maxLoadedPeers()).isEqualTo(100);
            assertThat(nixl.peerIdleLimit()).isEqualTo(Duration.ofMinutes(5));
            assertThat(nixl.ucxLogFile()).isEqualTo("/var/log/app/ucx-%p.log");
            assertThat(nixl.warmUp()).isFalse();
            assertThat(nixl.backendParameters()).isEqualTo(Map.of("num_threads", "4"));
            assertThat(nixl.libraryDir()).isEqualTo(Path.of("/opt/nixl/lib"));
            assertThat(nixl.nixlProgressThreadDelayMicros()).isNegative(); // the thread is refused on
            assertThat(properties.getNixl().getProgressThreadDelay()).isEqualTo(Duration.ofNanos(250_000));
            assertThat(properties.getCuda().getDeviceId()).isEqualTo(3);
            assertThat(properties.getCuda().isRequired()).isFalse(); // true without a GPU fails: NixlCudaAutoConfigurationTests
            assertThat(properties.getShutdown().getGracePeriod()).isEqualTo(Duration.ofMillis(1500));
            assertThat(context.getBean(Connector.class).name()).isEqualTo("decode-7");
        });
    }

    @Test
    void defaultsMatchTheDocumentedOnes() {
        runner.run(context -> {
            NixlConnectProperties properties = context.getBean(NixlConnectProperties.class);
            ConnectorOptions options = context.getBean(Connector.class).options();
            assertThat(options.transports()).extracting(TransportSettings::name).containsExactly("nixl", "embedded");
            EmbeddedSettings embedded = options.transport(EmbeddedSettings.class).orElseThrow();
            assertThat(embedded.bindAddress()).isEqualTo("127.0.0.1");
            assertThat(embedded.port()).isZero();
            assertThat(embedded.maxConnectionsPerPeer()).isEqualTo(8);
            assertThat(embedded.sameHostCopy()).isTrue();
            assertThat(properties.getEmbedded().isSameHostCopy()).isEqualTo(EmbeddedSettings.defaults().sameHostCopy());
            assertThat(embedded.tcpStreams()).isEqualTo(EmbeddedSettings.DEFAULT_TCP_STREAMS);
            assertThat(embedded.maxRangesPerRequest()).isEqualTo(EmbeddedSettings.DEFAULT_MAX_RANGES_PER_REQUEST);
            assertThat(options.operationTimeout()).isEqualTo(Duration.ofSeconds(30));
            assertThat(options.passiveTimeout()).isEqualTo(Duration.ofSeconds(60));
            assertThat(options.maxInFlightOperations()).isEqualTo(4096);
            assertThat(options.maxMetadataSize()).isEqualTo(16 * 1024 * 1024);
            NixlSettings nixl = options.transport(NixlSettings.class).orElseThrow();
            assertThat(nixl.backends()).isEqualTo(List.of("UCX"));
            assertThat(nixl.nixlProgressThreadDelayMicros()).isNegative();
            assertThat(properties.getCuda().getDeviceId()).isZero();
            assertThat(properties.getCuda().isRequired()).isFalse();
            assertThat(properties.getShutdown().getGracePeriod()).isEqualTo(Duration.ofSeconds(10));
        });
    }

    @Test
    void backendIsCaseInsensitiveLikeAnEnumAndNamesOneTransport() {
        runner.withPropertyValues("nixl.connect.backend=EMBEDDED").run(context -> {
            assertThat(context.getBean(Connector.class).options().transports()).extracting(TransportSettings::name)
                    .containsExactly("embedded");
            assertThat(context.getBean(Connector.class).backendName()).isEqualTo("embedded");
        });
    }

    @Test
    void userConnectorWinsAndServicesUseIt() {
        runner.withUserConfiguration(UserConnector.class).run(context -> {
            assertThat(context).hasSingleBean(Connector.class);
            Connector connector = context.getBean(Connector.class);
            assertThat(connector.name()).isEqualTo("mine");
            try (ReadableOperation published = context.getBean(NixlTransfers.class).publish(new byte[8])) {
                assertThat(published.connector()).isSameAs(connector);
            }
        });
    }

    @Test
    void userTransfersServiceWins() {
        runner.withUserConfiguration(UserTransfers.class).run(context -> assertThat(
                context.getBeanNamesForType(NixlTransfers.class)).containsExactly("customTransfers"));
    }

    @Test
    void closingTheContextClosesTheConnector() {
        Connector[] connector = new Connector[1];
        runner.run(context -> connector[0] = context.getBean(Connector.class));
        assertThat(connector[0].isServing()).isFalse();
        assertThat(connector[0].isAccepting()).isFalse();
    }

    @Configuration(proxyBeanMethods = false)
    static class UserConnector {

        @Bean
        Connector customConnector() {
            return new Connector(ConnectorOptions.builder().workerId("mine").transports(EmbeddedSettings.defaults()).build());
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class UserTransfers {

        @Bean
        NixlTransfers customTransfers(Connector connector) {
            return new NixlTransfers(connector, Duration.ofSeconds(1));
        }
    }
}
