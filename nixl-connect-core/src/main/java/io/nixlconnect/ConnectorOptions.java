package io.nixlconnect;

import io.nixlconnect.transport.TransportSettings;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * Settings of a {@link Connector}. Immutable; build with {@link #builder()}. Every setting has a default
 * that works on a developer machine. The transport is chosen by its settings: a preference list of
 * {@link TransportSettings} (each backend's own record, such as {@code EmbeddedSettings} or {@code NixlSettings}),
 * of which the connector opens the first that can be used here. By default that list is every backend with its
 * defaults, NIXL first: NIXL when it loads, else the embedded transport on loopback on a free port.
 */
public final class ConnectorOptions {

    /** Default for {@link Builder#operationTimeout}. */
    public static final Duration DEFAULT_OPERATION_TIMEOUT = Duration.ofSeconds(30);
    /** Default for {@link Builder#maxInFlightOperations}. */
    public static final int DEFAULT_MAX_IN_FLIGHT_OPERATIONS = 4096;
    /** Default for {@link Builder#maxMetadataSize}: 16 MiB of decoded agent metadata. */
    public static final int DEFAULT_MAX_METADATA_SIZE = 16 * 1024 * 1024;
    /** Default for {@link Builder#maxDescriptors}. */
    public static final int DEFAULT_MAX_DESCRIPTORS = 65536;
    /** Largest accepted {@link Builder#maxDescriptors}: what the embedded transport serves in one request. */
    public static final int MAX_DESCRIPTORS_LIMIT = 1 << 20;

    private final String workerId;
    private final List<TransportSettings> transports;
    private final Duration operationTimeout;
    private final Duration passiveTimeout;
    private final int maxInFlightOperations;
    private final int maxMetadataSize;
    private final int maxDescriptors;

    private ConnectorOptions(Builder b) {
        this.workerId = b.workerId;
        this.transports = b.transports != null ? b.transports : Transports.defaults();
        this.operationTimeout = b.operationTimeout;
        this.passiveTimeout = b.passiveTimeout;
        this.maxInFlightOperations = b.maxInFlightOperations;
        this.maxMetadataSize = b.maxMetadataSize;
        this.maxDescriptors = b.maxDescriptors;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** A builder holding these options, to derive variations. */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.workerId = workerId;
        b.transports = transports;
        b.operationTimeout = operationTimeout;
        b.passiveTimeout = passiveTimeout;
        b.maxInFlightOperations = maxInFlightOperations;
        b.maxMetadataSize = maxMetadataSize;
        b.maxDescriptors = maxDescriptors;
        return b;
    }

    /** Worker id; {@code null} means a new UUID without dashes. */
    public @Nullable String workerId() {
        return workerId;
    }

    /** The transports to try, in order of preference; the connector opens the first that can be used here. */
    public List<TransportSettings> transports() {
        return transports;
    }

    /** The settings of the given type in {@link #transports()}, if listed. */
    public <S extends TransportSettings> Optional<S> transport(Class<S> type) {
        return transports.stream().filter(type::isInstance).map(type::cast).findFirst();
    }

    /** Longest an active operation (read or write) may take before it ends ERRORED. */
    public Duration operationTimeout() {
        return operationTimeout;
    }

    /** Longest a passive operation waits for its peer before it ends ERRORED; {@code null} waits until closed. */
    public @Nullable Duration passiveTimeout() {
        return passiveTimeout;
    }

    public int maxInFlightOperations() {
        return maxInFlightOperations;
    }

    /** Largest decoded peer agent metadata accepted, in bytes. */
    public int maxMetadataSize() {
        return maxMetadataSize;
    }

    /** Most descriptors a peer's metadata may list; longer lists are refused before anything is registered. */
    public int maxDescriptors() {
        return maxDescriptors;
    }

    /** Builder of {@link ConnectorOptions}. Each setter validates its argument. */
    public static final class Builder {

        private String workerId;
        private List<TransportSettings> transports;
        private Duration operationTimeout = DEFAULT_OPERATION_TIMEOUT;
        private Duration passiveTimeout;
        private int maxInFlightOperations = DEFAULT_MAX_IN_FLIGHT_OPERATIONS;
        private int maxMetadataSize = DEFAULT_MAX_METADATA_SIZE;
        private int maxDescriptors = DEFAULT_MAX_DESCRIPTORS;

        private Builder() {
        }

        public Builder workerId(@Nullable String workerId) {
            if (workerId != null && workerId.isEmpty()) {
                throw new IllegalArgumentException("workerId must be a non-empty string or null");
            }
            this.workerId = workerId;
            return this;
        }

        /**
         * The transports to try, in order of preference: the connector opens the first that can be used here
         * (one that is not installed is skipped). One element: exactly that transport, or fail.
         */
        public Builder transports(TransportSettings... preference) {
            return transports(preference == null ? null : Arrays.asList(preference));
        }

        /** As {@link #transports(TransportSettings...)}; {@code null} restores the default (every backend, NIXL first). */
        public Builder transports(@Nullable List<TransportSettings> preference) {
            if (preference != null && (preference.isEmpty() || preference.stream().anyMatch(Objects::isNull))) {
                throw new IllegalArgumentException("transports must list at least one transport and no null, was "
                        + preference);
            }
            this.transports = preference == null ? null : List.copyOf(preference);
            return this;
        }

        public Builder operationTimeout(Duration timeout) {
            if (timeout == null || timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("operationTimeout must be positive, was " + timeout);
            }
            this.operationTimeout = timeout;
            return this;
        }

        /** {@code null} (the default) lets passive operations wait until closed. */
        public Builder passiveTimeout(@Nullable Duration timeout) {
            if (timeout != null && (timeout.isNegative() || timeout.isZero())) {
                throw new IllegalArgumentException("passiveTimeout must be positive or null, was " + timeout);
            }
            this.passiveTimeout = timeout;
            return this;
        }

        public Builder maxInFlightOperations(int max) {
            if (max < 1) {
                throw new IllegalArgumentException("maxInFlightOperations must be >= 1, was " + max);
            }
            this.maxInFlightOperations = max;
            return this;
        }

        public Builder maxMetadataSize(int bytes) {
            if (bytes < 1024 || bytes > RdmaMetadata.MAX_NIXL_METADATA_BYTES) {
                throw new IllegalArgumentException("maxMetadataSize must be 1 KiB.."
                        + RdmaMetadata.MAX_NIXL_METADATA_BYTES + " bytes, was " + bytes);
            }
            this.maxMetadataSize = bytes;
            return this;
        }

        public Builder maxDescriptors(int max) {
            if (max < 1 || max > MAX_DESCRIPTORS_LIMIT) {
                throw new IllegalArgumentException("maxDescriptors must be 1.." + MAX_DESCRIPTORS_LIMIT + ", was " + max);
            }
            this.maxDescriptors = max;
            return this;
        }

        public ConnectorOptions build() {
            return new ConnectorOptions(this);
        }
    }
}
