package io.nixlconnect.autoconfigure;

import io.nixlconnect.Connector;
import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import io.nixlconnect.transport.nixl.NixlSettings;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.util.unit.DataSize;

/**
 * Settings of the auto-configured {@link Connector}, bound from {@code nixl.connect.*}. Every default is the
 * library's own ({@link ConnectorOptions}, {@link EmbeddedSettings}, {@link NixlSettings}), read from there, not
 * copied; {@link NixlConnectorFactory} maps these properties onto those records, in one place. Checked by
 * {@link NixlConnectPropertiesValidator} before the connector is built; a wrong value stops start-up with a report
 * naming the property and how to fix it.
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
    private String backend = AUTO;

    /** Longest an active operation (read or write) may take before it ends with an error. */
    private Duration operationTimeout = ConnectorOptions.DEFAULT_OPERATION_TIMEOUT;

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

    public String getBackend() {
        return backend;
    }

    /** Case-insensitive, as an enum-typed property would be. */
    public void setBackend(String backend) {
        this.backend = backend == null ? null : backend.trim().toLowerCase(Locale.ROOT);
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

    /** {@code nixl.connect.backend} for "NIXL when it loads, else the embedded transport". */
    static final String AUTO = "auto";

    /** The embedded (pure-Java TCP) transport. */
    public static class Embedded {

        /** Address the embedded transport listens on. Loopback by default: set it to reach other hosts. */
        private String bindAddress = EmbeddedSettings.DEFAULT_BIND_ADDRESS;

        /** Port the embedded transport listens on; 0 picks a free port. */
        private int port = EmbeddedSettings.DEFAULT_PORT;

        /** Address peers use to reach this worker. Unset means the bind address (or this host's address for a wildcard bind). */
        private String advertisedAddress;

        /** Most connections opened to one peer at once; further transfers to it queue. */
        private int maxConnectionsPerPeer = EmbeddedSettings.DEFAULT_MAX_CONNECTIONS_PER_PEER;

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

        public int getMaxConnectionsPerPeer() {
            return maxConnectionsPerPeer;
        }

        public void setMaxConnectionsPerPeer(int maxConnectionsPerPeer) {
            this.maxConnectionsPerPeer = maxConnectionsPerPeer;
        }
    }

    /** Bounds that protect the worker from overload and hostile peers. */
    public static class Limits {

        /** Most operations in flight at once; creating one more fails fast. */
        private int maxInFlightOperations = ConnectorOptions.DEFAULT_MAX_IN_FLIGHT_OPERATIONS;

        /** Largest decoded peer agent metadata accepted (1KB to 64MB). */
        private DataSize maxMetadataSize = DataSize.ofBytes(ConnectorOptions.DEFAULT_MAX_METADATA_SIZE);

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
    }

    /** The NIXL backend (native library through JNA). */
    public static class Nixl {

        /** Directory holding libnixl_capi.so. Unset searches the default library locations. */
        private String libraryPath;

        /** NIXL plugin directory. Unset uses NIXL_PLUGIN_DIR or the library's 'plugins' folder. */
        private String pluginDirectory;

        /** NIXL backend plugins to create, in order of preference. */
        private List<String> backends = new ArrayList<>(NixlSettings.DEFAULT_BACKENDS);

        /** Parameters handed to every NIXL backend plugin. */
        private Map<String, String> backendParameters = new LinkedHashMap<>();

        /**
         * Pause between rounds of NIXL's own progress thread, which then runs beside this library's progress loop
         * (0 spins a core). Unset: NIXL's progress thread stays off and this library's loop alone drives NIXL.
         */
        private Duration progressThreadDelay;

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

        public Duration getProgressThreadDelay() {
            return progressThreadDelay;
        }

        public void setProgressThreadDelay(Duration progressThreadDelay) {
            this.progressThreadDelay = progressThreadDelay;
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
