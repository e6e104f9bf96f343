package io.nixlconnect.autoconfigure;

import io.nixlconnect.Connector;
import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.cuda.Cuda;
import io.nixlconnect.cuda.CudaAvailability;
import io.nixlconnect.cuda.CudaUnavailableException;
import io.nixlconnect.transport.TransportSettings;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import io.nixlconnect.transport.nixl.NixlSettings;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import javax.net.ssl.SSLContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.ssl.NoSuchSslBundleException;
import org.springframework.boot.ssl.SslBundles;

/**
 * Builds a {@link Connector} from {@link NixlConnectProperties} (already validated by Boot as they were bound) and
 * the {@link ConnectorOptionsCustomizer}s, and names start-up failures. The one place where properties map onto
 * the library's settings records.
 */
final class NixlConnectorFactory {

    private static final Logger log = LoggerFactory.getLogger(NixlConnectorFactory.class);

    private NixlConnectorFactory() {
    }

    /**
     * Says in one line whether GPU memory can be used, and refuses to start when it is required but cannot.
     * Looks for a GPU only when JCuda is on the classpath (the application asked for GPU support).
     */
    static void checkCuda(NixlConnectProperties.Cuda cuda) {
        CudaAvailability availability = Cuda.availability(cuda.getDeviceId());
        if (availability.available()) {
            log.info("nixl-connect: GPU support available ({} CUDA device(s); using cuda:{})",
                    availability.deviceCount(), cuda.getDeviceId());
        } else if (cuda.isRequired()) {
            throw new CudaUnavailableException(availability.reason());
        } else {
            log.info("nixl-connect: GPU support unavailable: {}", availability.reason());
        }
    }

    /**
     * Applies the customizers in order, checks CUDA, then starts the connector.
     *
     * @param properties      bound and already validated by Boot ({@link NixlConnectProperties} is its own validator)
     * @param applicationName {@code spring.application.name}, or null; the default worker id derives from it
     * @param sslBundles      the application's SSL bundles; null when none are configured
     * @param customizers     applied in order to the options built from the properties
     * @throws NixlConnectorStartupException if the transport does not start
     */
    static Connector create(NixlConnectProperties properties, String applicationName, SslBundles sslBundles,
            List<ConnectorOptionsCustomizer> customizers) {
        ConnectorOptions.Builder builder = options(properties, applicationName, sslBundles).toBuilder();
        customizers.forEach(customizer -> customizer.customize(builder));
        ConnectorOptions options = builder.build();
        checkCuda(properties.getCuda());
        try {
            return new Connector(options);
        } catch (RuntimeException | LinkageError e) {
            // LinkageError: a native library that is present but broken is also "backend not available".
            throw new NixlConnectorStartupException(options, e);
        }
    }

    /** @param sslBundles the application's SSL bundles; null when none are configured */
    static ConnectorOptions options(NixlConnectProperties properties, String applicationName, SslBundles sslBundles) {
        NixlConnectProperties.Limits limits = properties.getLimits();
        return ConnectorOptions.builder()
                .workerId(properties.getWorkerId() != null ? properties.getWorkerId() : defaultWorkerId(applicationName))
                .transports(transports(properties, sslBundles))
                .operationTimeout(properties.getOperationTimeout())
                .passiveTimeout(properties.getPassiveTimeout())
                .maxInFlightOperations(limits.getMaxInFlightOperations())
                .maxMetadataSize(Math.toIntExact(limits.getMaxMetadataSize().toBytes()))
                .maxDescriptors(limits.getMaxDescriptors())
                .build();
    }

    /** {@code nixl.connect.backend} as a preference list: {@code auto} is NIXL, then the embedded transport. */
    static List<TransportSettings> transports(NixlConnectProperties properties, SslBundles sslBundles) {
        EmbeddedSettings embedded = embedded(properties.getEmbedded(), sslBundles);
        NixlSettings nixl = nixl(properties.getNixl());
        return switch (properties.getBackend()) {
            case NixlSettings.NAME -> List.of(nixl);
            case EmbeddedSettings.NAME -> List.of(embedded);
            default -> List.of(nixl, embedded); // auto; validation refused anything else
        };
    }

    static EmbeddedSettings embedded(NixlConnectProperties.Embedded embedded, SslBundles sslBundles) {
        String secret = embedded.getSharedSecret();
        return EmbeddedSettings.defaults()
                .withBindAddress(embedded.getBindAddress())
                .withPort(embedded.getPort())
                .withAdvertisedAddress(embedded.getAdvertisedAddress())
                .withMaxConnectionsPerPeer(embedded.getMaxConnectionsPerPeer())
                .withSameHostCopy(embedded.isSameHostCopy())
                .withTcpStreams(embedded.getTcpStreams())
                .withSharedSecret(secret == null || secret.isBlank() ? null : secret)
                .withSslContext(sslContext(embedded.getSsl().getBundle(), sslBundles))
                .withTimeouts(embedded.getIdleTimeout(), embedded.getReadTimeout())
                .withServerConnectionLimits(embedded.getMaxConnections(), embedded.getMaxConnectionsPerAddress())
                .withMaxRangesPerRequest(embedded.getMaxRangesPerRequest())
                .withPeerLifecycle(embedded.getPeerIdleTimeout(), embedded.getMaxCachedPeers());
    }

    /** The named bundle's SSL context; null when no bundle is named. */
    private static SSLContext sslContext(String bundle, SslBundles sslBundles) {
        if (bundle == null || bundle.isBlank()) {
            return null;
        }
        String advice = " Define it under spring.ssl.bundle.jks." + bundle + " or spring.ssl.bundle.pem." + bundle
                + ", or remove the property for plain TCP.";
        if (sslBundles == null) {
            throw new IllegalStateException("nixl.connect.embedded.ssl.bundle=" + bundle
                    + " names an SSL bundle, but this application has no SSL bundles." + advice);
        }
        try {
            return SslBundleContext.of(sslBundles.getBundle(bundle.trim()));
        } catch (NoSuchSslBundleException e) { // not kept as the cause: the root cause should name the property
            throw new IllegalStateException("nixl.connect.embedded.ssl.bundle=" + bundle
                    + " names no SSL bundle of this application." + advice);
        }
    }

    static NixlSettings nixl(NixlConnectProperties.Nixl nixl) {
        Duration delay = nixl.getProgressThreadDelay();
        return NixlSettings.defaults()
                .withLibraryDir(path(nixl.getLibraryPath()))
                .withPluginDir(path(nixl.getPluginDirectory()))
                .withBackends(nixl.getBackends())
                .withBackendParameters(nixl.getBackendParameters())
                .withNixlProgressThreadDelayMicros(nixl.isProgressThread() ? delay.toNanos() / 1000 : -1)
                .withDrainLimit(nixl.getDrainLimit())
                .withMaxKeptBytes(nixl.getMaxKeptMemory().toBytes())
                .withMaxLoadedPeers(nixl.getMaxLoadedPeers())
                .withPeerIdleLimit(nixl.getPeerIdleLimit())
                .withUcxLogFile(nixl.getUcxLogFile() == null ? "" : nixl.getUcxLogFile())
                .withWarmUp(nixl.isWarmUp());
    }

    private static Path path(String value) {
        return value == null || value.isBlank() ? null : Path.of(value);
    }

    /** {@code <application name or "nixl">-<8 hex digits>}: readable in logs, unique across instances. */
    static String defaultWorkerId(String applicationName) {
        String prefix = applicationName == null || applicationName.isBlank() ? "nixl" : applicationName.trim();
        if (prefix.length() > NixlConnectProperties.MAX_WORKER_ID_LENGTH - 9) {
            prefix = prefix.substring(0, NixlConnectProperties.MAX_WORKER_ID_LENGTH - 9);
        }
        return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
    }
}
