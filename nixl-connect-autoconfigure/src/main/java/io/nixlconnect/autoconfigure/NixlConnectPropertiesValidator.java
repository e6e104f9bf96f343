package io.nixlconnect.autoconfigure;

import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.autoconfigure.InvalidNixlConnectPropertiesException.Violation;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.springframework.util.unit.DataSize;

/**
 * Checks {@link NixlConnectProperties} in code, so that the rules hold whether or not Bean Validation is on
 * the class path, and so that every broken rule is reported at once rather than the first one the core
 * library would throw on.
 */
final class NixlConnectPropertiesValidator {

    /** The agent name is the worker id plus a short suffix, and the transports cap it at 1024 bytes. */
    static final int MAX_WORKER_ID_LENGTH = 1000;
    static final DataSize MIN_METADATA_SIZE = DataSize.ofKilobytes(1);
    static final DataSize MAX_METADATA_SIZE = DataSize.ofBytes(RdmaMetadata.MAX_NIXL_METADATA_BYTES);

    private NixlConnectPropertiesValidator() {
    }

    /** @throws InvalidNixlConnectPropertiesException listing every property that breaks a rule */
    static void validate(NixlConnectProperties properties) {
        List<Violation> violations = new ArrayList<>();
        String workerId = properties.getWorkerId();
        if (workerId != null && (workerId.isBlank() || workerId.length() > MAX_WORKER_ID_LENGTH)) {
            violations.add(new Violation("nixl.connect.worker-id", workerId,
                    "must be 1.." + MAX_WORKER_ID_LENGTH + " characters and not blank",
                    "Remove it to get '<spring.application.name>-<unique suffix>', or set a short non-blank name."));
        }
        if (properties.getBackend() == null) {
            violations.add(new Violation("nixl.connect.backend", null, "must be set", "Set it to auto, nixl or embedded."));
        }
        Duration operationTimeout = properties.getOperationTimeout();
        if (operationTimeout == null || operationTimeout.isNegative() || operationTimeout.isZero()) {
            violations.add(new Violation("nixl.connect.operation-timeout", operationTimeout, "must be positive",
                    "Set a positive duration such as 30s (the default)."));
        }
        Duration passiveTimeout = properties.getPassiveTimeout();
        if (passiveTimeout != null && (passiveTimeout.isNegative() || passiveTimeout.isZero())) {
            violations.add(new Violation("nixl.connect.passive-timeout", passiveTimeout, "must be positive when set",
                    "Set a positive duration such as 5m, or remove it to let passive operations wait until closed."));
        }
        NixlConnectProperties.Embedded embedded = properties.getEmbedded();
        if (embedded.getBindAddress() == null || embedded.getBindAddress().isBlank()) {
            violations.add(new Violation("nixl.connect.embedded.bind-address", embedded.getBindAddress(),
                    "must not be blank", "Set an address of this host, such as 127.0.0.1 (the default) or 0.0.0.0."));
        }
        if (embedded.getPort() < 0 || embedded.getPort() > 65535) {
            violations.add(new Violation("nixl.connect.embedded.port", embedded.getPort(),
                    "must be between 0 and 65535", "Set 0 to pick a free port (the default), or a port from 1 to 65535."));
        }
        String secret = embedded.getSharedSecret();
        if (secret != null && !secret.isBlank()
                && secret.getBytes(StandardCharsets.UTF_8).length < EmbeddedSettings.MIN_SHARED_SECRET_LENGTH) {
            violations.add(new Violation("nixl.connect.embedded.shared-secret", "(hidden)",
                    "must be at least " + EmbeddedSettings.MIN_SHARED_SECRET_LENGTH + " bytes",
                    "Set a long random value, the same on every peer, or remove it for no authentication."));
        }
        requirePositive(violations, "nixl.connect.embedded.idle-timeout", embedded.getIdleTimeout(), "60s");
        requirePositive(violations, "nixl.connect.embedded.read-timeout", embedded.getReadTimeout(), "30s");
        if (embedded.getMaxConnections() < 1) {
            violations.add(new Violation("nixl.connect.embedded.max-connections", embedded.getMaxConnections(),
                    "must be at least 1", "Set a positive number such as 1024 (the default)."));
        } else if (embedded.getMaxConnectionsPerAddress() < 1
                || embedded.getMaxConnectionsPerAddress() > embedded.getMaxConnections()) {
            violations.add(new Violation("nixl.connect.embedded.max-connections-per-address",
                    embedded.getMaxConnectionsPerAddress(), "must be between 1 and max-connections ("
                            + embedded.getMaxConnections() + ")", "Set a number such as 256 (the default)."));
        }
        NixlConnectProperties.Limits limits = properties.getLimits();
        if (limits.getMaxDescriptors() < 1 || limits.getMaxDescriptors() > ConnectorOptions.MAX_DESCRIPTORS_LIMIT) {
            violations.add(new Violation("nixl.connect.limits.max-descriptors", limits.getMaxDescriptors(),
                    "must be between 1 and " + ConnectorOptions.MAX_DESCRIPTORS_LIMIT,
                    "Set a count such as " + ConnectorOptions.DEFAULT_MAX_DESCRIPTORS + " (the default)."));
        }
        if (limits.getMaxInFlightOperations() < 1) {
            violations.add(new Violation("nixl.connect.limits.max-in-flight-operations",
                    limits.getMaxInFlightOperations(), "must be at least 1", "Set a positive number such as 4096 (the default)."));
        }
        DataSize metadataSize = limits.getMaxMetadataSize();
        if (metadataSize == null || metadataSize.compareTo(MIN_METADATA_SIZE) < 0
                || metadataSize.compareTo(MAX_METADATA_SIZE) > 0) {
            violations.add(new Violation("nixl.connect.limits.max-metadata-size", metadataSize,
                    "must be between 1KB and 64MB", "Set a size such as 16MB (the default)."));
        }
        List<String> backends = properties.getNixl().getBackends();
        if (backends == null || backends.isEmpty() || backends.stream().anyMatch(b -> b == null || b.isBlank())) {
            violations.add(new Violation("nixl.connect.nixl.backends", backends, "must name at least one plugin, none blank",
                    "Set the NIXL backend plugins in order of preference, such as UCX (the default)."));
        }
        if (properties.getCuda().getDeviceId() < 0) {
            violations.add(new Violation("nixl.connect.cuda.device-id", properties.getCuda().getDeviceId(),
                    "must be 0 or more", "Set the index of a visible CUDA device, such as 0 (the default)."));
        }
        Duration grace = properties.getShutdown().getGracePeriod();
        if (grace == null || grace.isNegative()) {
            violations.add(new Violation("nixl.connect.shutdown.grace-period", grace, "must be zero or positive",
                    "Set how long in-flight operations may finish at shutdown, such as 10s (the default)."));
        }
        if (!violations.isEmpty()) {
            throw new InvalidNixlConnectPropertiesException(violations);
        }
    }

    private static void requirePositive(List<Violation> violations, String property, Duration value, String fallback) {
        if (value == null || value.isNegative() || value.isZero()) {
            violations.add(new Violation(property, value, "must be positive",
                    "Set a positive duration such as " + fallback + " (the default)."));
        }
    }
}
