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
import org.springframework.validation.Errors;
import org.springframework.validation.Validator;

/**
 * Settings of the auto-configured {@link Connector}, bound from {@code nixl.connect.*}. Every default is the
 * library's own ({@link ConnectorOptions}, {@link EmbeddedSettings}, {@link NixlSettings}), read from there, not
 * copied — except {@code passive-timeout}, finite here (see below); {@link NixlConnectorFactory} maps these
 * properties onto those records, in one place. Validated as it is bound ({@link NixlConnectPropertiesValidator}),
 * so a wrong value stops start-up with Boot's report: the property, its value, its origin (file and line) and what
 * to set instead, with or without Bean Validation on the class path.
 */
@ConfigurationProperties("nixl.connect")
public class NixlConnectProperties implements Validator {

    /** The agent name is the worker id plus a short suffix, and the transports cap it at 1024 bytes. */
    static final int MAX_WORKER_ID_LENGTH = 1000;

    private static final Validator VALIDATOR = new NixlConnectPropertiesValidator();

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

    /**
     * Longest a passive operation (readable or writable) waits for its peer before it ends with an error and
     * frees its registration. Finite by default so that buffers published for peers that never come (a
     * metadata GET whose caller died) cannot pile up until the in-flight limit refuses new operations.
     */
    private Duration passiveTimeout = Duration.ofSeconds(60);

    private final Embedded embedded = new Embedded();

    private final Limits limits = new Limits();

    private final Nixl nixl = new Nixl();

    private final Cuda cuda = new Cuda();

    private final Shutdown shutdown = new Shutdown();

    private final ProblemDetails problemDetails = new ProblemDetails();

    /**
     * Boot validates a {@code @ConfigurationProperties} object that is itself a {@link Validator}, without a global
     * validator bean and with or without Bean Validation: the rules themselves live in
     * {@link NixlConnectPropertiesValidator}.
     */
    @Override
    public boolean supports(Class<?> type) {
        return VALIDATOR.supports(type);
    }

    @Override
    public void validate(Object target, Errors errors) {
        VALIDATOR.validate(target, errors);
    }

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

    public ProblemDetails getProblemDetails() {
        return problemDetails;
    }

    /** {@code nixl.connect.backend} for "NIXL when it loads, else the embedded transport". */
    static final String AUTO = "auto";

    /** The values {@code nixl.connect.backend} accepts. */
    static final List<String> BACKENDS = List.of(AUTO, NixlSettings.NAME, EmbeddedSettings.NAME);

    /** The embedded (pure-Java TCP) transport; its properties are declared in {@code EmbeddedTransportProperties}. */
    public static class Embedded extends EmbeddedTransportProperties {

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
        private int maxInFlightOperations = ConnectorOptions.DEFAULT_MAX_IN_FLIGHT_OPERATIONS;

        /** Largest decoded peer agent metadata accepted (1KB to 64MB). */
        private DataSize maxMetadataSize = DataSize.ofBytes(ConnectorOptions.DEFAULT_MAX_METADATA_SIZE);

        /** Most descriptors a peer's metadata may list (1 to 1048576). */
        private int maxDescriptors = ConnectorOptions.DEFAULT_MAX_DESCRIPTORS;

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
        private List<String> backends = new ArrayList<>(NixlSettings.DEFAULT_BACKENDS);

        /** Parameters handed to every NIXL backend plugin. */
        private Map<String, String> backendParameters = new LinkedHashMap<>();

        /**
         * Whether NIXL's own progress thread runs beside this library's progress loop: it waits on UCX's event
         * descriptor and serves peers as their requests arrive, so agents waiting for readers cost no polling. Off:
         * this library's loop alone drives NIXL, polling (and spinning after activity) for its peers' sake. Must stay
         * off (true is refused at start-up): with it on, closing a connector during transfers corrupted UCX's memory
         * and crashed the JVM (docs/nixl.md).
         */
        private boolean progressThread = NixlSettings.DEFAULT_NIXL_PROGRESS_THREAD_DELAY_MICROS >= 0;

        /**
         * Longest wait of NIXL's progress thread on UCX's event descriptor between rounds (rounded up to a
         * millisecond; 0 spins a core).
         */
        private Duration progressThreadDelay = Duration.ofMillis(10);

        /**
         * How long a passive operation closed before its peer's notification keeps its memory registered for a
         * transfer that may still be in flight, plus the memory's size at 100 MB/s.
         */
        private Duration drainLimit = NixlSettings.DEFAULT_DRAIN_LIMIT;

        /**
         * Cap on memory kept resident for peers that stalled past the drain limit (health shows it against this; a
         * warning beyond it). Host memory the library owns has its pages given back at once; what counts is GPU memory.
         */
        private DataSize maxKeptMemory = DataSize.ofBytes(NixlSettings.DEFAULT_MAX_KEPT_BYTES);

        /**
         * How many peers an agent keeps loaded (each holds one UCX endpoint); past it the least recently used peer
         * with no transfer in flight is unloaded.
         */
        private int maxLoadedPeers = NixlSettings.DEFAULT_MAX_LOADED_PEERS;

        /** How long a loaded peer may go unused before it is unloaded; 0 never unloads an idle peer. */
        private Duration peerIdleLimit = NixlSettings.DEFAULT_PEER_IDLE_LIMIT;

        /**
         * Where UCX writes its own messages (UCX_LOG_FILE, set before UCX starts; %p is the process id, %h the host
         * name); empty leaves UCX's default, stdout. UCX_LOG_FILE in the environment wins.
         */
        private String ucxLogFile = NixlSettings.DEFAULT_UCX_LOG_FILE;

        /**
         * Whether each NIXL agent, as it starts, lets a throwaway agent of the process connect to it once, so that UCX
         * sets up its connections then rather than in the first peer's first operation.
         */
        private boolean warmUp = true;

        public boolean isWarmUp() {
            return warmUp;
        }

        public void setWarmUp(boolean warmUp) {
            this.warmUp = warmUp;
        }

        public String getUcxLogFile() {
            return ucxLogFile;
        }

        public void setUcxLogFile(String ucxLogFile) {
            this.ucxLogFile = ucxLogFile;
        }

        public int getMaxLoadedPeers() {
            return maxLoadedPeers;
        }

        public void setMaxLoadedPeers(int maxLoadedPeers) {
            this.maxLoadedPeers = maxLoadedPeers;
        }

        public Duration getPeerIdleLimit() {
            return peerIdleLimit;
        }

        public void setPeerIdleLimit(Duration peerIdleLimit) {
            this.peerIdleLimit = peerIdleLimit;
        }

        public Duration getDrainLimit() {
            return drainLimit;
        }

        public void setDrainLimit(Duration drainLimit) {
            this.drainLimit = drainLimit;
        }

        public DataSize getMaxKeptMemory() {
            return maxKeptMemory;
        }

        public void setMaxKeptMemory(DataSize maxKeptMemory) {
            this.maxKeptMemory = maxKeptMemory;
        }

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

        public boolean isProgressThread() {
            return progressThread;
        }

        public void setProgressThread(boolean progressThread) {
            this.progressThread = progressThread;
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

    /** HTTP answers of a web application whose request handlers let the library's exceptions escape. */
    public static class ProblemDetails {

        /**
         * Whether the library's exceptions become RFC 9457 problem details (503 at capacity or shutting down, 504 on
         * a timeout, 502 when a peer fails, 400 for invalid metadata) instead of a generic 500. The application's own
         * exception handlers always win.
         */
        private boolean enabled = true;

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }
    }
}
