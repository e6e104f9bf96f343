package io.nixlconnect.autoconfigure;

import io.nixlconnect.Connector;
import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.TransportBackend;
import java.util.UUID;

/** Builds a {@link Connector} from {@link NixlConnectProperties}: validates first, then names start-up failures. */
final class NixlConnectorFactory {

    private NixlConnectorFactory() {
    }

    /**
     * @param applicationName {@code spring.application.name}, or null; the default worker id derives from it
     * @throws InvalidNixlConnectPropertiesException if a property breaks a rule
     * @throws NixlConnectorStartupException         if the transport does not start
     */
    static Connector create(NixlConnectProperties properties, String applicationName) {
        ConnectorOptions options = options(properties, applicationName);
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
