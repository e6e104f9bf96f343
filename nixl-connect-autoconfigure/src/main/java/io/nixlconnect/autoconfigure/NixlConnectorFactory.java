package io.nixlconnect.autoconfigure;

import io.nixlconnect.Connector;
import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.TransportBackend;
import io.nixlconnect.cuda.CudaAvailability;
import io.nixlconnect.cuda.CudaUnavailableException;
import io.nixlconnect.autoconfigure.InvalidNixlConnectPropertiesException.Violation;
import java.util.List;
import java.util.UUID;
import javax.net.ssl.SSLContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.ssl.NoSuchSslBundleException;
import org.springframework.boot.ssl.SslBundles;

/** Builds a {@link Connector} from {@link NixlConnectProperties}: validates first, then names start-up failures. */
final class NixlConnectorFactory {

    private static final Logger log = LoggerFactory.getLogger(NixlConnectorFactory.class);

    private NixlConnectorFactory() {
    }

    /**
     * @param applicationName {@code spring.application.name}, or null; the default worker id derives from it
     * @throws InvalidNixlConnectPropertiesException if a property breaks a rule
     * @throws NixlConnectorStartupException         if the transport does not start
     */
    /**
     * Says in one line whether GPU memory can be used, and refuses to start when it is required but cannot.
     * Looks for a GPU only when JCuda is on the classpath (the application asked for GPU support).
     */
    static void checkCuda(NixlConnectProperties.Cuda cuda) {
        CudaAvailability availability = io.nixlconnect.cuda.Cuda.availability(cuda.getDeviceId());
        if (availability.available()) {
            log.info("nixl-connect: GPU support available ({} CUDA device(s); using cuda:{})",
                    availability.deviceCount(), cuda.getDeviceId());
        } else if (cuda.isRequired()) {
            throw new CudaUnavailableException(availability.reason());
        } else {
            log.info("nixl-connect: GPU support unavailable: {}", availability.reason());
        }
    }

    static Connector create(NixlConnectProperties properties, String applicationName, SslBundles sslBundles) {
        ConnectorOptions options = options(properties, applicationName, sslBundles);
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
        NixlConnectPropertiesValidator.validate(properties);
        NixlConnectProperties.Embedded embedded = properties.getEmbedded();
        NixlConnectProperties.Limits limits = properties.getLimits();
        NixlConnectProperties.Nixl nixl = properties.getNixl();
        return ConnectorOptions.builder()
                .workerId(properties.getWorkerId() != null ? properties.getWorkerId() : defaultWorkerId(applicationName))
                .backend(TransportBackend.valueOf(properties.getBackend().name()))
                .bindAddress(embedded.getBindAddress())
                .port(embedded.getPort())
                .advertisedAddress(embedded.getAdvertisedAddress())
                .operationTimeout(properties.getOperationTimeout())
                .passiveTimeout(properties.getPassiveTimeout())
                .maxInFlightOperations(limits.getMaxInFlightOperations())
                .maxMetadataSize(Math.toIntExact(limits.getMaxMetadataSize().toBytes()))
                .maxDescriptors(limits.getMaxDescriptors())
                .embeddedSharedSecret(embedded.getSharedSecret())
                .embeddedSslContext(sslContext(embedded.getSsl().getBundle(), sslBundles))
                .embeddedIdleTimeout(embedded.getIdleTimeout())
                .embeddedReadTimeout(embedded.getReadTimeout())
                .embeddedConnectionLimits(embedded.getMaxConnections(), embedded.getMaxConnectionsPerAddress())
                .nixlLibraryPath(nixl.getLibraryPath())
                .nixlPluginDirectory(nixl.getPluginDirectory())
                .nixlBackends(nixl.getBackends())
                .nixlBackendParameters(nixl.getBackendParameters())
                .build();
    }

    /** The named bundle's SSL context; null when no bundle is named. */
    private static SSLContext sslContext(String bundle, SslBundles sslBundles) {
        if (bundle == null || bundle.isBlank()) {
            return null;
        }
        String property = "nixl.connect.embedded.ssl.bundle";
        if (sslBundles == null) {
            throw new InvalidNixlConnectPropertiesException(List.of(new Violation(property, bundle,
                    "names an SSL bundle, but this application has no SSL bundles",
                    "Define it under spring.ssl.bundle.jks." + bundle + " or spring.ssl.bundle.pem." + bundle
                            + ", or remove the property for plain TCP.")));
        }
        try {
            return SslBundleContext.of(sslBundles.getBundle(bundle.trim()));
        } catch (NoSuchSslBundleException e) {
            throw new InvalidNixlConnectPropertiesException(List.of(new Violation(property, bundle,
                    "names no SSL bundle of this application",
                    "Define it under spring.ssl.bundle.jks." + bundle + " or spring.ssl.bundle.pem." + bundle
                            + ", or remove the property for plain TCP.")));
        }
    }

    /** {@code <application name or "nixl">-<8 hex digits>}: readable in logs, unique across instances. */
    static String defaultWorkerId(String applicationName) {
        String prefix = applicationName == null || applicationName.isBlank() ? "nixl" : applicationName.trim();
        if (prefix.length() > NixlConnectPropertiesValidator.MAX_WORKER_ID_LENGTH - 9) {
            prefix = prefix.substring(0, NixlConnectPropertiesValidator.MAX_WORKER_ID_LENGTH - 9);
        }
        return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
    }
}
