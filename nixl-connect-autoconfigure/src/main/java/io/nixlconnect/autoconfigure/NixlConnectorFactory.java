package io.nixlconnect.autoconfigure;

import io.nixlconnect.Connector;
import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.TransportBackend;
import io.nixlconnect.cuda.CudaAvailability;
import io.nixlconnect.cuda.CudaUnavailableException;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Builds a {@link Connector} from {@link NixlConnectProperties}: validates first, then names start-up failures. */
final class NixlConnectorFactory {

    private static final Logger log = LoggerFactory.getLogger(NixlConnectorFactory.class);

    private NixlConnectorFactory() {
    }

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

    /**
     * Validates the properties, checks CUDA, then starts the connector.
     *
     * @param applicationName {@code spring.application.name}, or null; the default worker id derives from it
     * @throws InvalidNixlConnectPropertiesException if a property breaks a rule
     * @throws NixlConnectorStartupException         if the transport does not start
     */
    static Connector create(NixlConnectProperties properties, String applicationName) {
        ConnectorOptions options = options(properties, applicationName);
        checkCuda(properties.getCuda());
        try {
            return new Connector(options);
        } catch (RuntimeException | LinkageError e) {
            // LinkageError: a native library that is present but broken is also "backend not available".
            throw new NixlConnectorStartupException(options, e);
        }
    }

    static ConnectorOptions options(NixlConnectProperties properties, String applicationName) {
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
                .nixlLibraryPath(nixl.getLibraryPath())
                .nixlPluginDirectory(nixl.getPluginDirectory())
                .nixlBackends(nixl.getBackends())
                .nixlBackendParameters(nixl.getBackendParameters())
                .build();
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
