package io.nixlconnect;

import io.nixlconnect.transport.embedded.EmbeddedSettings;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import javax.net.ssl.SSLContext;

/**
 * Settings of a {@link Connector}. Immutable; build with {@link #builder()}. Every setting has a default
 * that works on a developer machine: embedded transport on loopback, an ephemeral port.
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
    private final TransportBackend backend;
    private final String bindAddress;
    private final int port;
    private final String advertisedAddress;
    private final Duration operationTimeout;
    private final Duration passiveTimeout;
    private final int maxInFlightOperations;
    private final int maxMetadataSize;
    private final int maxDescriptors;
    private final String embeddedSharedSecret;
    private final SSLContext embeddedSslContext;
    private final Duration embeddedIdleTimeout;
    private final Duration embeddedReadTimeout;
    private final int embeddedMaxConnections;
    private final int embeddedMaxConnectionsPerAddress;
    private final String nixlLibraryPath;
    private final String nixlPluginDirectory;
    private final List<String> nixlBackends;
    private final Map<String, String> nixlBackendParameters;

    private ConnectorOptions(Builder b) {
        this.workerId = b.workerId;
        this.backend = b.backend;
        this.bindAddress = b.bindAddress;
        this.port = b.port;
        this.advertisedAddress = b.advertisedAddress;
        this.operationTimeout = b.operationTimeout;
        this.passiveTimeout = b.passiveTimeout;
        this.maxInFlightOperations = b.maxInFlightOperations;
        this.maxMetadataSize = b.maxMetadataSize;
        this.maxDescriptors = b.maxDescriptors;
        this.embeddedSharedSecret = b.embeddedSharedSecret;
        this.embeddedSslContext = b.embeddedSslContext;
        this.embeddedIdleTimeout = b.embeddedIdleTimeout;
        this.embeddedReadTimeout = b.embeddedReadTimeout;
        this.embeddedMaxConnections = b.embeddedMaxConnections;
        this.embeddedMaxConnectionsPerAddress = b.embeddedMaxConnectionsPerAddress;
        this.nixlLibraryPath = b.nixlLibraryPath;
        this.nixlPluginDirectory = b.nixlPluginDirectory;
        this.nixlBackends = List.copyOf(b.nixlBackends);
        this.nixlBackendParameters = Map.copyOf(b.nixlBackendParameters);
    }

    public static Builder builder() {
        return new Builder();
    }

    /** A builder holding these options, to derive variations. */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.workerId = workerId;
        b.backend = backend;
        b.bindAddress = bindAddress;
        b.port = port;
        b.advertisedAddress = advertisedAddress;
        b.operationTimeout = operationTimeout;
        b.passiveTimeout = passiveTimeout;
        b.maxInFlightOperations = maxInFlightOperations;
        b.maxMetadataSize = maxMetadataSize;
        b.maxDescriptors = maxDescriptors;
        b.embeddedSharedSecret = embeddedSharedSecret;
        b.embeddedSslContext = embeddedSslContext;
        b.embeddedIdleTimeout = embeddedIdleTimeout;
        b.embeddedReadTimeout = embeddedReadTimeout;
        b.embeddedMaxConnections = embeddedMaxConnections;
        b.embeddedMaxConnectionsPerAddress = embeddedMaxConnectionsPerAddress;
        b.nixlLibraryPath = nixlLibraryPath;
        b.nixlPluginDirectory = nixlPluginDirectory;
        b.nixlBackends = nixlBackends;
        b.nixlBackendParameters = nixlBackendParameters;
        return b;
    }

    /** Worker id; {@code null} means a new UUID without dashes. */
    public String workerId() {
        return workerId;
    }

    public TransportBackend backend() {
        return backend;
    }

    /** Address the embedded transport listens on. */
    public String bindAddress() {
        return bindAddress;
    }

    /** Port the embedded transport listens on; 0 picks a free one. */
    public int port() {
        return port;
    }

    /** Address peers use to reach the embedded transport; {@code null} means the bind address (or the host's, for a wildcard bind). */
    public String advertisedAddress() {
        return advertisedAddress;
    }

    /** Longest an active operation (read or write) may take before it ends ERRORED. */
    public Duration operationTimeout() {
        return operationTimeout;
    }

    /** Longest a passive operation waits for its peer before it ends ERRORED; {@code null} waits until closed. */
    public Duration passiveTimeout() {
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

    /**
     * Secret embedded-transport peers must prove to each other before any request is read; {@code null}: none.
     * Not printed anywhere.
     */
    public String embeddedSharedSecret() {
        return embeddedSharedSecret;
    }

    /** TLS for the embedded transport's connections (mutual: both sides present a certificate); {@code null}: plain TCP. */
    public SSLContext embeddedSslContext() {
        return embeddedSslContext;
    }

    /** Longest the embedded server waits for a connection's next request (or its authentication) before closing it. */
    public Duration embeddedIdleTimeout() {
        return embeddedIdleTimeout;
    }

    /** Longest a request in progress on the embedded server may make no progress before it is closed. */
    public Duration embeddedReadTimeout() {
        return embeddedReadTimeout;
    }

    /** Connections the embedded server holds at once (its handler threads are bounded by the same number). */
    public int embeddedMaxConnections() {
        return embeddedMaxConnections;
    }

    /** Connections the embedded server holds at once from one remote address. */
    public int embeddedMaxConnectionsPerAddress() {
        return embeddedMaxConnectionsPerAddress;
    }

    /** Directory holding {@code libnixl_capi.so}; {@code null} searches the default places. */
    public String nixlLibraryPath() {
        return nixlLibraryPath;
    }

    /** NIXL plugin directory; {@code null} uses {@code NIXL_PLUGIN_DIR} or the library's {@code plugins} folder. */
    public String nixlPluginDirectory() {
        return nixlPluginDirectory;
    }

    /** NIXL backend plugins to create, in order of preference. */
    public List<String> nixlBackends() {
        return nixlBackends;
    }

    /** Parameters handed to every NIXL backend plugin. */
    public Map<String, String> nixlBackendParameters() {
        return nixlBackendParameters;
    }

    /** Builder of {@link ConnectorOptions}. Each setter validates its argument. */
    public static final class Builder {

        private String workerId;
        private TransportBackend backend = TransportBackend.AUTO;
        private String bindAddress = "127.0.0.1";
        private int port;
        private String advertisedAddress;
        private Duration operationTimeout = DEFAULT_OPERATION_TIMEOUT;
        private Duration passiveTimeout;
        private int maxInFlightOperations = DEFAULT_MAX_IN_FLIGHT_OPERATIONS;
        private int maxMetadataSize = DEFAULT_MAX_METADATA_SIZE;
        private int maxDescriptors = DEFAULT_MAX_DESCRIPTORS;
        private String embeddedSharedSecret;
        private SSLContext embeddedSslContext;
        private Duration embeddedIdleTimeout = EmbeddedSettings.DEFAULT_IDLE_TIMEOUT;
        private Duration embeddedReadTimeout = EmbeddedSettings.DEFAULT_READ_TIMEOUT;
        private int embeddedMaxConnections = EmbeddedSettings.DEFAULT_MAX_SERVER_CONNECTIONS;
        private int embeddedMaxConnectionsPerAddress = EmbeddedSettings.DEFAULT_MAX_CONNECTIONS_PER_ADDRESS;
        private String nixlLibraryPath;
        private String nixlPluginDirectory;
        private List<String> nixlBackends = List.of("UCX");
        private Map<String, String> nixlBackendParameters = Map.of();

        private Builder() {
        }

        public Builder workerId(String workerId) {
            if (workerId != null && workerId.isEmpty()) {
                throw new IllegalArgumentException("workerId must be a non-empty string or null");
            }
            this.workerId = workerId;
            return this;
        }

        public Builder backend(TransportBackend backend) {
            this.backend = Objects.requireNonNull(backend, "backend");
            return this;
        }

        public Builder bindAddress(String bindAddress) {
            if (bindAddress == null || bindAddress.isBlank()) {
                throw new IllegalArgumentException("bindAddress must not be blank");
            }
            this.bindAddress = bindAddress;
            return this;
        }

        public Builder port(int port) {
            if (port < 0 || port > 65535) {
                throw new IllegalArgumentException("port must be 0..65535, was " + port);
            }
            this.port = port;
            return this;
        }

        public Builder advertisedAddress(String advertisedAddress) {
            this.advertisedAddress = advertisedAddress == null || advertisedAddress.isBlank() ? null : advertisedAddress;
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
        public Builder passiveTimeout(Duration timeout) {
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

        /**
         * Authenticates embedded-transport peers with a shared secret (at least
         * {@value EmbeddedSettings#MIN_SHARED_SECRET_LENGTH} bytes, the same on every peer); {@code null} or blank: none.
         */
        public Builder embeddedSharedSecret(String secret) {
            String value = secret == null || secret.isBlank() ? null : secret;
            if (value != null && value.getBytes(StandardCharsets.UTF_8).length < EmbeddedSettings.MIN_SHARED_SECRET_LENGTH) {
                throw new IllegalArgumentException("embeddedSharedSecret must be at least "
                        + EmbeddedSettings.MIN_SHARED_SECRET_LENGTH + " bytes");
            }
            this.embeddedSharedSecret = value;
            return this;
        }

        /** Runs the embedded transport over TLS from {@code context}; {@code null}: plain TCP. */
        public Builder embeddedSslContext(SSLContext context) {
            this.embeddedSslContext = context;
            return this;
        }

        public Builder embeddedIdleTimeout(Duration timeout) {
            if (timeout == null || timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("embeddedIdleTimeout must be positive, was " + timeout);
            }
            this.embeddedIdleTimeout = timeout;
            return this;
        }

        public Builder embeddedReadTimeout(Duration timeout) {
            if (timeout == null || timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("embeddedReadTimeout must be positive, was " + timeout);
            }
            this.embeddedReadTimeout = timeout;
            return this;
        }

        /** The embedded server's connection limits: in all, and from one remote address (at most the first). */
        public Builder embeddedConnectionLimits(int maxConnections, int maxPerAddress) {
            if (maxConnections < 1 || maxPerAddress < 1 || maxPerAddress > maxConnections) {
                throw new IllegalArgumentException("embedded connection limits must be >= 1 with the per-address limit "
                        + "at most the total, were " + maxConnections + " and " + maxPerAddress);
            }
            this.embeddedMaxConnections = maxConnections;
            this.embeddedMaxConnectionsPerAddress = maxPerAddress;
            return this;
        }

        public Builder nixlLibraryPath(String path) {
            this.nixlLibraryPath = path == null || path.isBlank() ? null : path;
            return this;
        }

        public Builder nixlPluginDirectory(String directory) {
            this.nixlPluginDirectory = directory == null || directory.isBlank() ? null : directory;
            return this;
        }

        public Builder nixlBackends(List<String> backends) {
            if (backends == null || backends.isEmpty() || backends.stream().anyMatch(b -> b == null || b.isBlank())) {
                throw new IllegalArgumentException("nixlBackends must name at least one plugin, was " + backends);
            }
            this.nixlBackends = List.copyOf(backends);
            return this;
        }

        public Builder nixlBackendParameters(Map<String, String> parameters) {
            this.nixlBackendParameters = Map.copyOf(Objects.requireNonNull(parameters, "nixlBackendParameters"));
            return this;
        }

        public ConnectorOptions build() {
            return new ConnectorOptions(this);
        }
    }
}
