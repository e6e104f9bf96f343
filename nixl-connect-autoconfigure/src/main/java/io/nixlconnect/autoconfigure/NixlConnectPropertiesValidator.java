package io.nixlconnect.autoconfigure;

import io.nixlconnect.transport.nixl.NixlSettings;

import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.springframework.util.unit.DataSize;
import org.springframework.validation.Errors;
import org.springframework.validation.Validator;

/**
 * The rules for {@code nixl.connect.*} values, each error saying what to set instead. Boot applies it as the
 * properties are bound ({@link NixlConnectProperties} hands its self-validation here), calling it once for the
 * root object and once for each nested group, so each group's rules check that group's fields alone and Boot
 * can match every error to the property, and the origin, it came from.
 */
final class NixlConnectPropertiesValidator implements Validator {

    static final DataSize MIN_METADATA_SIZE = DataSize.ofKilobytes(1);
    static final DataSize MAX_METADATA_SIZE = DataSize.ofBytes(RdmaMetadata.MAX_NIXL_METADATA_BYTES);

    @Override
    public boolean supports(Class<?> type) {
        return type == NixlConnectProperties.class || type == NixlConnectProperties.Embedded.class
                || type == NixlConnectProperties.Limits.class || type == NixlConnectProperties.Nixl.class
                || type == NixlConnectProperties.Cuda.class || type == NixlConnectProperties.Shutdown.class;
    }

    @Override
    public void validate(Object target, Errors errors) {
        if (target instanceof NixlConnectProperties properties) {
            validateRoot(properties, errors);
        } else if (target instanceof NixlConnectProperties.Embedded embedded) {
            validateEmbedded(embedded, errors);
        } else if (target instanceof NixlConnectProperties.Limits limits) {
            validateLimits(limits, errors);
        } else if (target instanceof NixlConnectProperties.Nixl nixl) {
            validateNixl(nixl, errors);
        } else if (target instanceof NixlConnectProperties.Cuda cuda) {
            if (cuda.getDeviceId() < 0) {
                errors.rejectValue("deviceId", "negative", "must be 0 or more: the index of a visible CUDA device");
            }
        } else if (target instanceof NixlConnectProperties.Shutdown shutdown) {
            Duration grace = shutdown.getGracePeriod();
            if (grace == null || grace.isNegative()) {
                errors.rejectValue("gracePeriod", "negative", "must be zero or positive, such as 10s (the default)");
            }
        }
    }

    private static void validateRoot(NixlConnectProperties properties, Errors errors) {
        String workerId = properties.getWorkerId();
        if (workerId != null && workerId.isBlank()) {
            errors.rejectValue("workerId", "blank", "must not be blank; remove it to get "
                    + "'<spring.application.name>-<unique suffix>', or set a short name");
        } else if (workerId != null && workerId.length() > NixlConnectProperties.MAX_WORKER_ID_LENGTH) {
            errors.rejectValue("workerId", "tooLong", "must be at most " + NixlConnectProperties.MAX_WORKER_ID_LENGTH
                    + " characters");
        }
        if (!NixlConnectProperties.BACKENDS.contains(properties.getBackend())) {
            errors.rejectValue("backend", "unknown", "must be one of " + NixlConnectProperties.BACKENDS
                    + ": auto (NIXL when it loads, else embedded; the default), nixl or embedded");
        }
        if (!isPositive(properties.getOperationTimeout())) {
            errors.rejectValue("operationTimeout", "notPositive", "must be positive, such as 30s (the default)");
        }
        if (!isPositive(properties.getPassiveTimeout())) {
            errors.rejectValue("passiveTimeout", "notPositive",
                    "must be positive, such as 60s (the default); set a long one such as 24h for slow peers");
        }
    }

    private static void validateEmbedded(NixlConnectProperties.Embedded embedded, Errors errors) {
        if (embedded.getBindAddress() == null || embedded.getBindAddress().isBlank()) {
            errors.rejectValue("bindAddress", "blank",
                    "must be an address of this host, such as 127.0.0.1 (the default) or 0.0.0.0");
        }
        if (embedded.getPort() < 0 || embedded.getPort() > 65535) {
            errors.rejectValue("port", "outOfRange", "must be between 0 and 65535; 0 picks a free port (the default)");
        }
        if (embedded.getMaxConnectionsPerPeer() < 1) {
            errors.rejectValue("maxConnectionsPerPeer", "notPositive", "must be at least 1, such as "
                    + EmbeddedSettings.DEFAULT_MAX_CONNECTIONS_PER_PEER + " (the default)");
        }
        if (embedded.getTcpStreams() < 1 || embedded.getTcpStreams() > EmbeddedSettings.MAX_TCP_STREAMS) {
            errors.rejectValue("tcpStreams", "outOfRange", "must be between 1 and " + EmbeddedSettings.MAX_TCP_STREAMS
                    + " (connections one large transfer is striped over; 1: one connection), such as "
                    + EmbeddedSettings.DEFAULT_TCP_STREAMS + " (the default)");
        }
        String secret = embedded.getSharedSecret();
        if (secret != null && !secret.isBlank()
                && secret.getBytes(StandardCharsets.UTF_8).length < EmbeddedSettings.MIN_SHARED_SECRET_LENGTH) {
            // an object error, not a field error: a field error would print the secret with the failure
            errors.reject("sharedSecretTooShort", "nixl.connect.embedded.shared-secret must be at least "
                    + EmbeddedSettings.MIN_SHARED_SECRET_LENGTH + " bytes (value not shown): set a long random "
                    + "value, the same on every peer, or remove it for no authentication");
        }
        rejectUnlessPositive(errors, "idleTimeout", embedded.getIdleTimeout(), EmbeddedSettings.DEFAULT_IDLE_TIMEOUT);
        rejectUnlessPositive(errors, "readTimeout", embedded.getReadTimeout(), EmbeddedSettings.DEFAULT_READ_TIMEOUT);
        if (embedded.getMaxConnections() < 1) {
            errors.rejectValue("maxConnections", "notPositive", "must be at least 1, such as "
                    + EmbeddedSettings.DEFAULT_MAX_SERVER_CONNECTIONS + " (the default)");
        } else if (embedded.getMaxConnectionsPerAddress() < 1
                || embedded.getMaxConnectionsPerAddress() > embedded.getMaxConnections()) {
            errors.rejectValue("maxConnectionsPerAddress", "outOfRange", "must be between 1 and max-connections ("
                    + embedded.getMaxConnections() + "), such as "
                    + EmbeddedSettings.DEFAULT_MAX_CONNECTIONS_PER_ADDRESS + " (the default)");
        }
        if (embedded.getMaxRangesPerRequest() < 1
                || embedded.getMaxRangesPerRequest() > EmbeddedSettings.MAX_RANGES_PER_REQUEST) {
            errors.rejectValue("maxRangesPerRequest", "outOfRange", "must be between 1 and "
                    + EmbeddedSettings.MAX_RANGES_PER_REQUEST + " (the default)");
        }
        rejectUnlessPositive(errors, "peerIdleTimeout", embedded.getPeerIdleTimeout(),
                EmbeddedSettings.DEFAULT_PEER_IDLE_TIMEOUT);
        if (embedded.getMaxCachedPeers() < 1) {
            errors.rejectValue("maxCachedPeers", "notPositive", "must be at least 1, such as "
                    + EmbeddedSettings.DEFAULT_MAX_CACHED_PEERS + " (the default; size it for the peers this worker "
                    + "reads from or writes to)");
        }
    }

    private static void validateLimits(NixlConnectProperties.Limits limits, Errors errors) {
        if (limits.getMaxInFlightOperations() < 1) {
            errors.rejectValue("maxInFlightOperations", "notPositive", "must be at least 1, such as 4096 (the default)");
        }
        DataSize size = limits.getMaxMetadataSize();
        if (size == null || size.compareTo(MIN_METADATA_SIZE) < 0 || size.compareTo(MAX_METADATA_SIZE) > 0) {
            errors.rejectValue("maxMetadataSize", "outOfRange", "must be between 1KB and 64MB, such as 16MB (the default)");
        }
        if (limits.getMaxDescriptors() < 1 || limits.getMaxDescriptors() > ConnectorOptions.MAX_DESCRIPTORS_LIMIT) {
            errors.rejectValue("maxDescriptors", "outOfRange", "must be between 1 and "
                    + ConnectorOptions.MAX_DESCRIPTORS_LIMIT + ", such as " + ConnectorOptions.DEFAULT_MAX_DESCRIPTORS
                    + " (the default)");
        }
    }

    private static void validateNixl(NixlConnectProperties.Nixl nixl, Errors errors) {
        List<String> backends = nixl.getBackends();
        if (backends == null || backends.isEmpty() || backends.stream().anyMatch(b -> b == null || b.isBlank())) {
            errors.rejectValue("backends", "empty",
                    "must name at least one NIXL plugin, none blank, such as UCX (the default)");
        }
        Map<String, String> parameters = nixl.getBackendParameters();
        if (parameters != null && parameters.entrySet().stream().anyMatch(e -> e.getKey().isEmpty()
                || e.getValue() == null || e.getKey().indexOf('\0') >= 0 || e.getValue().indexOf('\0') >= 0)) {
            errors.rejectValue("backendParameters", "invalid", "must have non-empty names and values, free of NUL "
                    + "characters: nixl.connect.nixl.backend-parameters.<name>=<value>");
        }
        Duration drainLimit = nixl.getDrainLimit();
        if (drainLimit == null || drainLimit.isNegative() || drainLimit.isZero()) {
            errors.rejectValue("drainLimit", "notPositive", "must be positive, such as 2s (the default)");
        }
        DataSize maxKept = nixl.getMaxKeptMemory();
        if (maxKept == null || maxKept.isNegative()) {
            errors.rejectValue("maxKeptMemory", "negative", "must be 0 or more, such as 1GB (the default)");
        }
        if (nixl.getMaxLoadedPeers() < 1) {
            errors.rejectValue("maxLoadedPeers", "tooSmall", "must be at least 1, such as "
                    + NixlSettings.DEFAULT_MAX_LOADED_PEERS + " (the default)");
        }
        Duration peerIdleLimit = nixl.getPeerIdleLimit();
        if (peerIdleLimit == null || peerIdleLimit.isNegative()) {
            errors.rejectValue("peerIdleLimit", "negative", "must be zero (never) or positive, such as 30m (the"
                    + " default)");
        }
        if (nixl.getUcxLogFile() != null && nixl.getUcxLogFile().indexOf('\0') >= 0) {
            errors.rejectValue("ucxLogFile", "invalid", "must be free of NUL characters");
        }
        if (nixl.isProgressThread()) {
            errors.rejectValue("progressThread", "unsupported", "NIXL's own progress thread is not supported: with it"
                    + " on, closing a connector during transfers corrupted UCX's memory (docs/nixl.md); set it to false"
                    + " (the default)");
        }
        Duration progressDelay = nixl.getProgressThreadDelay();
        if (progressDelay == null || progressDelay.isNegative()) {
            errors.rejectValue("progressThreadDelay", "negative", "must be zero or positive, such as 10ms (the "
                    + "default); to turn NIXL's own progress thread off set nixl.connect.nixl.progress-thread=false");
        }
    }

    private static void rejectUnlessPositive(Errors errors, String field, Duration value, Duration defaultValue) {
        if (!isPositive(value)) {
            errors.rejectValue(field, "notPositive", "must be positive, such as "
                    + defaultValue.toSeconds() + "s (the default)");
        }
    }

    private static boolean isPositive(Duration duration) {
        return duration != null && !duration.isNegative() && !duration.isZero();
    }
}
