package io.nixlconnect.autoconfigure;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.util.unit.DataSize;

/**
 * Settings of the auto-configured {@link io.nixlconnect.Connector}, bound from {@code nixl.connect.*}.
 * Checked by {@link NixlConnectPropertiesValidator} before the connector is built; a wrong value stops
 * start-up with a report naming the property and how to fix it.
 */
@ConfigurationProperties("nixl.connect")
public class NixlConnectProperties {

    /** Whether to auto-configure a nixl-connect Connector and its integrations (health, metrics, observations). */
    private boolean enabled = true;

    /**
     * Worker id, the name peers know this connector by. Defaults to 'spring.application.name' (or 'nixl')
     * followed by a unique suffix, so that several instances of one application never collide.
     */
    private String workerId;

    /**
     * Transport: 'auto' uses NIXL when its native library loads and the embedded TCP transport otherwise;
     * 'nixl' requires NIXL; 'embedded' never touches native transport code.
     */
    private Backend backend = Backend.AUTO;

    /** Longest an active operation (read or write) may take before it ends with an error. */
    private Duration operationTimeout = Duration.ofSeconds(30);

    /** Longest a passive operation (readable or writable) waits for its peer. Unset waits until closed. */
    private Duration passiveTimeout;

    private final Embedded embedded = new Embedded();

    private final Limits limits = new Limits();

    private final Nixl nixl = new Nixl();

    private final Cuda cuda = new Cuda();

    private final Shutdown shutdown = new Shutdown();

    public boolean isEnabled() {
        return enabled;
    }

    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    public String getWorkerId() {
        return workerId;
    }

    public void setWorkerId(String workerId) {
        this.workerId = workerId;
    }

    public Backend getBackend() {
        return backend;
    }

    public void setBackend(Backend backend) {
        this.backend = backend;
    }

    public Duration getOperationTimeout() {
        return operationTimeout;
    }

    public void setOperationTimeout(Duration operationTimeout) {
        this.operationTimeout = operationTimeout;
    }

    public Duration getPassiveTimeout() {
        return passiveTimeout;
    }

    public void setPassiveTimeout(Duration passiveTimeout) {
        this.passiveTimeout = passiveTimeout;
    }

    public Embedded getEmbedded() {
        return embedded;
    }

    public Limits getLimits() {
        return limits;
    }

    public Nixl getNixl() {
        return nixl;
    }

    public Cuda getCuda() {
        return cuda;
    }

    public Shutdown getShutdown() {
        return shutdown;
    }

    /** Which transport the connector uses. */
    public enum Backend {
        /** NIXL when its native library loads, otherwise the embedded transport. */
        AUTO,
        /** NIXL only; start-up fails when it is not available. */
        NIXL,
        /** The pure-Java TCP transport. */
        EMBEDDED
    }

    /** The embedded (pure-Java TCP) transport. */
    public static class Embedded {

        /** Address the embedded transport listens on. Loopback by default: set it to reach other hosts. */
        private String bindAddress = "127.0.0.1";

        /** Port the embedded transport listens on; 0 picks a free port. */
        private int port = 0;

        /** Address peers use to reach this worker. Unset means the bind address (or this host's address for a wildcard bind). */
        private String advertisedAddress;

        /**
         * Secret every peer must prove (challenge-response, the secret never travels) before this worker reads its
         * requests, and that this worker proves to the peers it connects to. At least 16 bytes, the same on every
         * peer. Unset: no authentication.
         */
        private String sharedSecret;

        private final Ssl ssl = new Ssl();

        /** Longest the server waits for a connection's next request (or its authentication) before closing it. */
        private Duration idleTimeout = Duration.ofSeconds(60);

        /** Longest a request in progress may make no progress before the server closes its connection. */
        private Duration readTimeout = Duration.ofSeconds(30);

        /**
         * Connections the server holds at once; its handler threads are bounded by the same number. When full, the
         * connection that has waited longest for a request is closed to make room.
         */
        private int maxConnections = 1024;

        /** Connections the server holds at once from one remote address (at most max-connections). */
        private int maxConnectionsPerAddress = 256;

        public String getBindAddress() {
            return bindAddress;
        }

        public void setBindAddress(String bindAddress) {
            this.bindAddress = bindAddress;
        }

        public int getPort() {
            return port;
        }

        public void setPort(int port) {
            this.port = port;
        }

        public String getAdvertisedAddress() {
            return advertisedAddress;
        }

        public void setAdvertisedAddress(String advertisedAddress) {
            this.advertisedAddress = advertisedAddress;
        }

        public String getSharedSecret() {
            return sharedSecret;
        }

        public void setSharedSecret(String sharedSecret) {
            this.sharedSecret = sharedSecret;
        }

        public Ssl getSsl() {
            return ssl;
        }

        public Duration getIdleTimeout() {
            return idleTimeout;
        }

        public void setIdleTimeout(Duration idleTimeout) {
            this.idleTimeout = idleTimeout;
        }

        public Duration getReadTimeout() {
            return readTimeout;
        }

        public void setReadTimeout(Duration readTimeout) {
            this.readTimeout = readTimeout;
        }

        public int getMaxConnections() {
            return maxConnections;
        }

        public void setMaxConnections(int maxConnections) {
            this.maxConnections = maxConnections;
        }

        public int getMaxConnectionsPerAddress() {
            return maxConnectionsPerAddress;
        }

        public void setMaxConnectionsPerAddress(int maxConnectionsPerAddress) {
            this.maxConnectionsPerAddress = maxConnectionsPerAddress;
        }

        /** TLS for the embedded transport's connections. */
        public static class Ssl {

            /**
             * Name of the SSL bundle (spring.ssl.bundle.*) whose key and trust material secure every connection,
             * both ways: each side presents its certificate and checks the other's. Unset: plain TCP.
             */
            private String bundle;

            public String getBundle() {
                return bundle;
            }

            public void setBundle(String bundle) {
                this.bundle = bundle;
            }
        }
    }

    /** Bounds that protect the worker from overload and hostile peers. */
    public static class Limits {

        /** Most operations in flight at once; creating one more fails fast. */
        private int maxInFlightOperations = 4096;

        /** Largest decoded peer agent metadata accepted (1KB to 64MB). */
        private DataSize maxMetadataSize = DataSize.ofMegabytes(16);

        /** Most descriptors a peer's metadata may list (1 to 1048576). */
        private int maxDescriptors = 65536;

        public int getMaxInFlightOperations() {
            return maxInFlightOperations;
        }

        public void setMaxInFlightOperations(int maxInFlightOperations) {
            this.maxInFlightOperations = maxInFlightOperations;
        }

        public DataSize getMaxMetadataSize() {
            return maxMetadataSize;
        }

        public void setMaxMetadataSize(DataSize maxMetadataSize) {
            this.maxMetadataSize = maxMetadataSize;
        }

        public int getMaxDescriptors() {
            return maxDescriptors;
        }

        public void setMaxDescriptors(int maxDescriptors) {
            this.maxDescriptors = maxDescriptors;
        }
    }

    /** The NIXL backend (native library through JNA). */
    public static class Nixl {

        /** Directory holding libnixl_capi.so. Unset searches the default library locations. */
        private String libraryPath;

        /** NIXL plugin directory. Unset uses NIXL_PLUGIN_DIR or the library's 'plugins' folder. */
        private String pluginDirectory;

        /** NIXL backend plugins to create, in order of preference. */
        private List<String> backends = new ArrayList<>(List.of("UCX"));

        /** Parameters handed to every NIXL backend plugin. */
        private Map<String, String> backendParameters = new LinkedHashMap<>();

        public String getLibraryPath() {
            return libraryPath;
        }

        public void setLibraryPath(String libraryPath) {
            this.libraryPath = libraryPath;
        }

        public String getPluginDirectory() {
            return pluginDirectory;
        }

        public void setPluginDirectory(String pluginDirectory) {
            this.pluginDirectory = pluginDirectory;
        }

        public List<String> getBackends() {
            return backends;
        }

        public void setBackends(List<String> backends) {
            this.backends = backends;
        }

        public Map<String, String> getBackendParameters() {
            return backendParameters;
        }

        public void setBackendParameters(Map<String, String> backendParameters) {
            this.backendParameters = backendParameters;
        }
    }

    /** CUDA devices. */
    public static class Cuda {

        /** CUDA device this worker allocates on and reports. */
        private int deviceId = 0;

        /** Whether start-up must fail when CUDA (or the configured device) is not available. */
        private boolean required = false;

        public int getDeviceId() {
            return deviceId;
        }

        public void setDeviceId(int deviceId) {
            this.deviceId = deviceId;
        }

        public boolean isRequired() {
            return required;
        }

        public void setRequired(boolean required) {
            this.required = required;
        }
    }

    /** Graceful shutdown. */
    public static class Shutdown {

        /**
         * How long operations in flight may still run once the application shuts down; new operations are
         * refused meanwhile, and whatever is left is then cancelled.
         */
        private Duration gracePeriod = Duration.ofSeconds(10);

        public Duration getGracePeriod() {
            return gracePeriod;
        }

        public void setGracePeriod(Duration gracePeriod) {
            this.gracePeriod = gracePeriod;
        }
    }
}
