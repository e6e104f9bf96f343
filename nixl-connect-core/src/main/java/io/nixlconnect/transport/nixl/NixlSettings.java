package io.nixlconnect.transport.nixl;

import io.nixlconnect.transport.Transport;
import io.nixlconnect.transport.TransportException;
import io.nixlconnect.transport.TransportSettings;
import io.nixlconnect.transport.TransportUnavailableException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * How to find and configure NIXL; every default is defined here, once. Start from {@link #defaults()} and
 * change what differs with the {@code with…} methods.
 *
 * @param libraryDir        directory holding {@code libnixl_capi.so}; null to search (see {@code docs/nixl.md})
 * @param pluginDir         NIXL backend plugin directory; null for {@code NIXL_PLUGIN_DIR}, else
 *                          {@code <dir of libnixl.so>/plugins}
 * @param backends          backend plugins every agent creates, in order; at least one
 * @param backendParameters parameters given to every backend on top of the plugin's defaults
 *                          (for UCX e.g. {@code ucx_error_handling_mode=none})
 * @param nixlProgressThreadDelayMicros negative (the default, and the only value accepted): NIXL's own progress thread
 *                          is off and this transport's progress loop alone drives NIXL; {@code >= 0} (that thread on,
 *                          waiting on UCX's event descriptor that many microseconds between rounds) is refused, see
 *                          {@link #DEFAULT_NIXL_PROGRESS_THREAD_DELAY_MICROS}
 * @param drainLimit        the fixed part of the drain limit: how long a passive operation closed before its peer's
 *                          notification keeps its memory registered (plus its size at 100 MB/s), for a transfer that
 *                          may still be in flight; positive
 * @param maxKeptBytes      cap on memory kept resident for peers that stalled past the drain limit, which its owner
 *                          would have freed (health shows it against this, the agent warns beyond it): host memory the
 *                          library owns has its pages given back at once (it stays mapped), so what counts is GPU memory
 *                          and the partial pages at the ends of host allocations; at least 0
 * @param maxLoadedPeers    how many peers an agent keeps loaded (each holds one UCX endpoint: a socket on TCP, a queue
 *                          pair on RDMA); past it the least recently used peer with no transfer in flight is unloaded;
 *                          at least 1
 * @param peerIdleLimit     how long a loaded peer may go unused before it is unloaded; {@link Duration#ZERO} never
 *                          unloads an idle peer; not negative
 * @param ucxLogFile        where UCX writes its own messages ({@code UCX_LOG_FILE}, set before UCX starts, with its
 *                          {@code %p} and {@code %h}; at most twice 16 MiB kept); empty leaves UCX's default, stdout;
 *                          {@code UCX_LOG_FILE} in the environment wins; only the first NIXL transport of a process
 *                          sets it
 * @param warmUp            whether each agent, as it starts, connects once to a throwaway agent of its own process, so
 *                          that UCX builds its connection setup then rather than in the first peer's first operation
 */
public record NixlSettings(@Nullable Path libraryDir, @Nullable Path pluginDir, List<String> backends,
        Map<String, String> backendParameters, long nixlProgressThreadDelayMicros, Duration drainLimit,
        long maxKeptBytes, int maxLoadedPeers, Duration peerIdleLimit, String ucxLogFile, boolean warmUp)
        implements TransportSettings {

    /** The backend's name. */
    public static final String NAME = "nixl";
    /** Default for {@link #backends}: UCX, which finds RDMA, NVLink, shared memory or TCP. */
    public static final List<String> DEFAULT_BACKENDS = List.of("UCX");
    /**
     * Default for {@link #nixlProgressThreadDelayMicros}: NIXL's own progress thread off, and turning it on is refused.
     * With it on (NIXL 1.5.1), closing a connector while four threads read corrupted the native heap in 3 to 6 of 10
     * runs (SIGSEGV in UCX's {@code ucs_mem_region_destroy_internal} at destroy, in {@code ucp_proto_init_*} at a later
     * post, or glibc's "double free or corruption"), also when cancelled transfers were first let end: an operation
     * cancelled or closed while that thread progresses UCX is not safe (docs/nixl.md).
     */
    public static final long DEFAULT_NIXL_PROGRESS_THREAD_DELAY_MICROS = -1;
    /** Default for {@link #drainLimit}: 2 s. */
    public static final Duration DEFAULT_DRAIN_LIMIT = Duration.ofSeconds(2);
    /** Default for {@link #maxKeptBytes}: 1 GiB. */
    public static final long DEFAULT_MAX_KEPT_BYTES = 1L << 30;
    /**
     * Default for {@link #maxLoadedPeers}: 512. A fleet of a few hundred peers stays loaded, so reading round-robin
     * from all of them unloads nothing (unloading a peer that is still alive costs a new connection at its next
     * operation, and with NIXL 1.5 leaves its old socket open until either process ends: docs/nixl.md); 512 endpoints
     * stay well inside a default limit of open files.
     */
    public static final int DEFAULT_MAX_LOADED_PEERS = 512;
    /**
     * Default for {@link #peerIdleLimit}: 30 minutes. A peer that left is dropped by then (its connection closed with
     * its process; what the agent still holds for it goes), while a live peer used at least that often is not
     * reconnected over and over.
     */
    public static final Duration DEFAULT_PEER_IDLE_LIMIT = Duration.ofMinutes(30);
    /**
     * Default for {@link #ucxLogFile}: {@code <java.io.tmpdir>/nixl-connect-ucx-%p.log} (UCX puts the process id for
     * {@code %p}), so that UCX's messages stay out of the application's stdout.
     */
    public static final String DEFAULT_UCX_LOG_FILE =
            Path.of(System.getProperty("java.io.tmpdir"), "nixl-connect-ucx-%p.log").toString();
    public NixlSettings {
        if (nixlProgressThreadDelayMicros >= 0) {
            throw new IllegalArgumentException("NIXL's own progress thread (nixlProgressThreadDelayMicros "
                    + nixlProgressThreadDelayMicros + ") is not supported: with it on, closing a connector or cancelling"
                    + " during transfers corrupted UCX's memory (docs/nixl.md); leave it off (a negative value)");
        }
        drainLimit = drainLimit == null ? DEFAULT_DRAIN_LIMIT : drainLimit;
        if (drainLimit.isNegative() || drainLimit.isZero()) {
            throw new IllegalArgumentException("drainLimit must be positive, was " + drainLimit);
        }
        ucxLogFile = ucxLogFile == null ? DEFAULT_UCX_LOG_FILE : ucxLogFile;
        if (ucxLogFile.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("ucxLogFile must be free of NUL characters");
        }
        if (maxLoadedPeers < 1) {
            throw new IllegalArgumentException("maxLoadedPeers must be at least 1, was " + maxLoadedPeers);
        }
        peerIdleLimit = peerIdleLimit == null ? DEFAULT_PEER_IDLE_LIMIT : peerIdleLimit;
        if (peerIdleLimit.isNegative()) {
            throw new IllegalArgumentException("peerIdleLimit must not be negative (zero: never), was " + peerIdleLimit);
        }
        if (maxKeptBytes < 0) {
            throw new IllegalArgumentException("maxKeptBytes must be >= 0, was " + maxKeptBytes);
        }
        backends = backends == null ? DEFAULT_BACKENDS : List.copyOf(backends);
        if (backends.isEmpty()) {
            throw new IllegalArgumentException("at least one NIXL backend plugin is needed (e.g. UCX)");
        }
        for (String backend : backends) {
            requireCString("backend name", backend);
        }
        backendParameters = backendParameters == null ? Map.of() : Map.copyOf(backendParameters);
        backendParameters.forEach((key, value) -> {
            requireCString("backend parameter name", key);
            if (value == null || value.indexOf('\0') >= 0) {
                throw new IllegalArgumentException("backend parameter '" + key + "' has no value or a NUL character");
            }
        });
    }

    /** Search for NIXL, UCX backend with its defaults. */
    public static NixlSettings defaults() {
        return new NixlSettings(null, null, DEFAULT_BACKENDS, Map.of(), DEFAULT_NIXL_PROGRESS_THREAD_DELAY_MICROS,
                DEFAULT_DRAIN_LIMIT, DEFAULT_MAX_KEPT_BYTES, DEFAULT_MAX_LOADED_PEERS, DEFAULT_PEER_IDLE_LIMIT,
                DEFAULT_UCX_LOG_FILE, true);
    }

    public NixlSettings withLibraryDir(@Nullable Path dir) {
        return new NixlSettings(dir, pluginDir, backends, backendParameters, nixlProgressThreadDelayMicros, drainLimit,
                maxKeptBytes, maxLoadedPeers, peerIdleLimit, ucxLogFile, warmUp);
    }

    public NixlSettings withPluginDir(@Nullable Path dir) {
        return new NixlSettings(libraryDir, dir, backends, backendParameters, nixlProgressThreadDelayMicros, drainLimit,
                maxKeptBytes, maxLoadedPeers, peerIdleLimit, ucxLogFile, warmUp);
    }

    public NixlSettings withBackends(List<String> names) {
        return new NixlSettings(libraryDir, pluginDir, names, backendParameters, nixlProgressThreadDelayMicros, drainLimit,
                maxKeptBytes, maxLoadedPeers, peerIdleLimit, ucxLogFile, warmUp);
    }

    public NixlSettings withBackendParameters(Map<String, String> parameters) {
        return new NixlSettings(libraryDir, pluginDir, backends, parameters, nixlProgressThreadDelayMicros, drainLimit,
                maxKeptBytes, maxLoadedPeers, peerIdleLimit, ucxLogFile, warmUp);
    }

    /** NIXL's own progress thread: off with a negative value (the default); on ({@code >= 0}) is refused. */
    public NixlSettings withNixlProgressThreadDelayMicros(long micros) {
        return new NixlSettings(libraryDir, pluginDir, backends, backendParameters, micros, drainLimit, maxKeptBytes,
                maxLoadedPeers, peerIdleLimit, ucxLogFile, warmUp);
    }

    /** Sets the fixed part of the drain limit (positive). */
    public NixlSettings withDrainLimit(Duration limit) {
        return new NixlSettings(libraryDir, pluginDir, backends, backendParameters, nixlProgressThreadDelayMicros, limit,
                maxKeptBytes, maxLoadedPeers, peerIdleLimit, ucxLogFile, warmUp);
    }

    /** Sets the cap on memory kept resident for stalled peers (at least 0). */
    public NixlSettings withMaxKeptBytes(long bytes) {
        return new NixlSettings(libraryDir, pluginDir, backends, backendParameters, nixlProgressThreadDelayMicros,
                drainLimit, bytes, maxLoadedPeers, peerIdleLimit, ucxLogFile, warmUp);
    }

    /** Sets how many peers an agent keeps loaded (at least 1). */
    public NixlSettings withMaxLoadedPeers(int peers) {
        return new NixlSettings(libraryDir, pluginDir, backends, backendParameters, nixlProgressThreadDelayMicros,
                drainLimit, maxKeptBytes, peers, peerIdleLimit, ucxLogFile, warmUp);
    }

    /** Sets how long a loaded peer may go unused before it is unloaded ({@link Duration#ZERO}: never). */
    public NixlSettings withPeerIdleLimit(Duration limit) {
        return new NixlSettings(libraryDir, pluginDir, backends, backendParameters, nixlProgressThreadDelayMicros,
                drainLimit, maxKeptBytes, maxLoadedPeers, limit, ucxLogFile, warmUp);
    }

    /**
     * Sets where UCX writes its own messages (a file, {@code %p} and {@code %h} substituted by UCX; empty: UCX's default,
     * stdout). Takes effect for the first NIXL transport of the process, and only without {@code UCX_LOG_FILE} in the
     * environment.
     */
    public NixlSettings withUcxLogFile(String file) {
        return new NixlSettings(libraryDir, pluginDir, backends, backendParameters, nixlProgressThreadDelayMicros,
                drainLimit, maxKeptBytes, maxLoadedPeers, peerIdleLimit, file, warmUp);
    }

    /**
     * Sets whether each agent warms UCX up as it starts (see {@link #warmUp}): on, a new agent takes a few milliseconds
     * more to start and its first peer's first operation is not slowed by UCX's connection setup.
     */
    public NixlSettings withWarmUp(boolean on) {
        return new NixlSettings(libraryDir, pluginDir, backends, backendParameters, nixlProgressThreadDelayMicros,
                drainLimit, maxKeptBytes, maxLoadedPeers, peerIdleLimit, ucxLogFile, on);
    }

    @Override
    public String name() {
        return NAME;
    }

    /**
     * Finds and loads NIXL.
     *
     * @throws TransportUnavailableException if NIXL is not found (the message lists where it looked and what to
     *                                       set), is a stub build, is older than 1.1, or its library does not link
     */
    @Override
    public Transport open() {
        try {
            return NixlTransport.open(this);
        } catch (TransportException | LinkageError e) {
            throw new TransportUnavailableException("NIXL cannot be used: " + e.getMessage()
                    + " Install NIXL (>= 1.1) or point to it (library path setting, NIXL_PREFIX).", e);
        }
    }

    static void requireCString(String what, String value) {
        if (value == null || value.isEmpty() || value.indexOf('\0') >= 0) {
            throw new IllegalArgumentException(what + " must be non-empty and free of NUL characters, was "
                    + (value == null ? "null" : "'" + value.replace("\0", "\\0") + "'"));
        }
    }
}
