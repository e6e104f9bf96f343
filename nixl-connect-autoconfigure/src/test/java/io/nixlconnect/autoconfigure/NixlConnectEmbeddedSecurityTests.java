package io.nixlconnect.autoconfigure;

import io.nixlconnect.transport.embedded.EmbeddedSettings;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nixlconnect.Connector;
import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.Descriptor;
import io.nixlconnect.ReadOperation;
import io.nixlconnect.ReadableOperation;
import io.nixlconnect.TransferException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.ssl.SslAutoConfiguration;
import org.springframework.boot.context.properties.bind.validation.BindValidationException;
import org.springframework.boot.ssl.SslBundles;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** {@code nixl.connect.embedded.ssl.bundle} (a Spring Boot SSL bundle), {@code shared-secret} and {@code limits.max-descriptors}. */
class NixlConnectEmbeddedSecurityTests {

    private static final String SECRET = "a-long-shared-secret-for-the-test";

    @TempDir
    static Path directory;
    static Path keyStore;

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(SslAutoConfiguration.class, NixlConnectAutoConfiguration.class))
            .withPropertyValues("nixl.connect.backend=embedded");

    @BeforeAll
    static void keyStore() throws Exception {
        keyStore = directory.resolve("peer.p12");
        Path keytool = Path.of(System.getProperty("java.home"), "bin", "keytool");
        Process process = new ProcessBuilder(keytool.toString(), "-genkeypair", "-alias", "peer", "-keyalg", "EC",
                "-groupname", "secp256r1", "-dname", "CN=peer", "-validity", "2", "-storetype", "PKCS12",
                "-keystore", keyStore.toString(), "-storepass", "changeit", "-keypass", "changeit")
                .redirectErrorStream(true).start();
        process.getInputStream().readAllBytes();
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(process.exitValue()).isZero();
    }

    private ApplicationContextRunner withBundle() {
        String location = "file:" + keyStore;
        return runner.withPropertyValues("spring.ssl.bundle.jks.peer.keystore.location=" + location,
                "spring.ssl.bundle.jks.peer.keystore.password=changeit", "spring.ssl.bundle.jks.peer.keystore.type=PKCS12",
                "spring.ssl.bundle.jks.peer.truststore.location=" + location,
                "spring.ssl.bundle.jks.peer.truststore.password=changeit",
                "spring.ssl.bundle.jks.peer.truststore.type=PKCS12", "nixl.connect.embedded.ssl.bundle=peer");
    }

    private static void read(Connector reader, Connector publisher) {
        byte[] data = new byte[4096];
        new java.util.Random().nextBytes(data);
        try (Descriptor source = new Descriptor(data); Descriptor target = Descriptor.allocate(4096)) {
            ReadableOperation readable = publisher.createReadable(source);
            ReadOperation read = reader.beginRead(readable.metadata(), target);
            try {
                read.waitForCompletion(Duration.ofSeconds(20));
                assertThat(target.toByteArray()).isEqualTo(data);
            } finally {
                readable.close();
            }
        }
    }

    @Test
    void theNamedSslBundleSecuresTheEmbeddedTransport() {
        withBundle().run(context -> {
            Connector connector = context.getBean(Connector.class);
            SSLContext bundle = context.getBean(SslBundles.class).getBundle("peer").createSslContext();
            assertThat(embedded(connector).sslContext()).isNotNull();
            try (Connector tlsPeer = new Connector(ConnectorOptions.builder()
                    .transports(EmbeddedSettings.defaults().withSslContext(bundle)).build());
                 Connector plainPeer = new Connector(ConnectorOptions.builder().transports(EmbeddedSettings.defaults()).build())) {
                read(tlsPeer, connector);
                read(connector, tlsPeer);
                assertThatThrownBy(() -> read(plainPeer, connector)).isInstanceOf(TransferException.class);
            }
        });
    }

    @Test
    void theBundlesEnabledProtocolsAndCiphersApply() {
        String cipher = "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256";
        withBundle().withPropertyValues("spring.ssl.bundle.jks.peer.options.enabled-protocols=TLSv1.2",
                "spring.ssl.bundle.jks.peer.options.ciphers=" + cipher).run(context -> {
            Connector connector = context.getBean(Connector.class);
            try (javax.net.ssl.SSLSocket socket = (javax.net.ssl.SSLSocket) embedded(connector).sslContext()
                    .getSocketFactory().createSocket()) {
                assertThat(socket.getEnabledProtocols()).containsExactly("TLSv1.2");
                assertThat(socket.getEnabledCipherSuites()).containsExactly(cipher);
            }
            SSLContext unrestricted = context.getBean(SslBundles.class).getBundle("peer").createSslContext();
            try (Connector tlsPeer = new Connector(ConnectorOptions.builder()
                    .transports(EmbeddedSettings.defaults().withSslContext(unrestricted)).build())) {
                read(tlsPeer, connector);
                read(connector, tlsPeer);
            }
        });
    }

    @Test
    void aMissingBundleStopsStartUpNamingTheProperty() {
        runner.withPropertyValues("nixl.connect.embedded.ssl.bundle=absent").run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).rootCause().hasMessageContaining("nixl.connect.embedded.ssl.bundle")
                    .hasMessageContaining("absent");
        });
    }

    @Test
    void theSharedSecretAuthenticatesPeers() {
        runner.withPropertyValues("nixl.connect.embedded.shared-secret=" + SECRET).run(context -> {
            Connector connector = context.getBean(Connector.class);
            assertThat(embedded(connector).sharedSecret()).isEqualTo(SECRET);
            try (Connector sameSecret = new Connector(ConnectorOptions.builder()
                    .transports(EmbeddedSettings.defaults().withSharedSecret(SECRET)).build());
                 Connector noSecret = new Connector(ConnectorOptions.builder().transports(EmbeddedSettings.defaults()).build())) {
                read(sameSecret, connector);
                assertThatThrownBy(() -> read(noSecret, connector)).isInstanceOf(TransferException.class)
                        .hasMessageContaining("requires authentication");
            }
        });
    }

    @Test
    void aShortSecretIsRefusedWithoutPrintingIt() {
        runner.withPropertyValues("nixl.connect.embedded.shared-secret=tooshort").run(context -> {
            assertThat(context).hasFailed();
            Throwable failure = context.getStartupFailure();
            assertThat(failure).rootCause().isInstanceOf(BindValidationException.class)
                    .hasMessageContaining("nixl.connect.embedded.shared-secret");
            for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
                assertThat(cause.getMessage()).doesNotContain("tooshort");
            }
        });
    }

    @Test
    void serverTimeoutsAndConnectionLimitsBindAndDefault() {
        runner.run(context -> {
            EmbeddedSettings settings = embedded(context.getBean(Connector.class));
            assertThat(settings.idleTimeout()).isEqualTo(Duration.ofSeconds(60));
            assertThat(settings.readTimeout()).isEqualTo(Duration.ofSeconds(30));
            assertThat(settings.maxServerConnections()).isEqualTo(1024);
            assertThat(settings.maxConnectionsPerAddress()).isEqualTo(256);
        });
        runner.withPropertyValues("nixl.connect.embedded.idle-timeout=5s", "nixl.connect.embedded.read-timeout=2s",
                "nixl.connect.embedded.max-connections=100", "nixl.connect.embedded.max-connections-per-address=10")
                .run(context -> {
                    EmbeddedSettings settings = embedded(context.getBean(Connector.class));
                    assertThat(settings.idleTimeout()).isEqualTo(Duration.ofSeconds(5));
                    assertThat(settings.readTimeout()).isEqualTo(Duration.ofSeconds(2));
                    assertThat(settings.maxServerConnections()).isEqualTo(100);
                    assertThat(settings.maxConnectionsPerAddress()).isEqualTo(10);
                });
        runner.withPropertyValues("nixl.connect.embedded.idle-timeout=0s",
                "nixl.connect.embedded.max-connections-per-address=2000").run(context -> {
                    assertThat(context).hasFailed();
                    assertThat(context.getStartupFailure()).rootCause().isInstanceOf(BindValidationException.class)
                            .hasMessageContaining("idleTimeout")
                            .hasMessageContaining("maxConnectionsPerAddress");
                });
    }

    @Test
    void thePeerLifecycleBindsAndDefaults() {
        runner.run(context -> {
            EmbeddedSettings settings = embedded(context.getBean(Connector.class));
            assertThat(settings.peerIdleTimeout()).isEqualTo(EmbeddedSettings.DEFAULT_PEER_IDLE_TIMEOUT);
            assertThat(settings.maxCachedPeers()).isEqualTo(EmbeddedSettings.DEFAULT_MAX_CACHED_PEERS);
        });
        runner.withPropertyValues("nixl.connect.embedded.peer-idle-timeout=5s",
                "nixl.connect.embedded.max-cached-peers=64").run(context -> {
                    EmbeddedSettings settings = embedded(context.getBean(Connector.class));
                    assertThat(settings.peerIdleTimeout()).isEqualTo(Duration.ofSeconds(5));
                    assertThat(settings.maxCachedPeers()).isEqualTo(64);
                });
        runner.withPropertyValues("nixl.connect.embedded.max-cached-peers=0").run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).rootCause().isInstanceOf(BindValidationException.class)
                    .hasMessageContaining("maxCachedPeers");
        });
    }

    @Test
    void maxDescriptorsBindsAndDefaults() {
        runner.run(context -> assertThat(context.getBean(Connector.class).options().maxDescriptors())
                .isEqualTo(ConnectorOptions.DEFAULT_MAX_DESCRIPTORS));
        runner.withPropertyValues("nixl.connect.limits.max-descriptors=12").run(context ->
                assertThat(context.getBean(Connector.class).options().maxDescriptors()).isEqualTo(12));
        runner.withPropertyValues("nixl.connect.limits.max-descriptors=0").run(context -> assertThat(context).hasFailed());
    }

    private static EmbeddedSettings embedded(Connector connector) {
        return connector.options().transport(EmbeddedSettings.class).orElseThrow();
    }
}
