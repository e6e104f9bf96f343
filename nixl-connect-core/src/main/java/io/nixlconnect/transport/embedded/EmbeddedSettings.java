package io.nixlconnect.transport.embedded;

import io.nixlconnect.transport.Transport;
import io.nixlconnect.transport.TransportSettings;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import javax.net.ssl.SSLContext;
import org.jspecify.annotations.Nullable;

/**
 * Settings of the embedded (pure-Java TCP) transport; every default is defined here, once. Start from
 * {@link #defaults()} and change what differs with the {@code with…} methods.
 *
 * @param bindAddress              address the server listens on (default {@value #DEFAULT_BIND_ADDRESS}: loopback)
 * @param port                     port, 0 (the default) for an ephemeral one
 * @param advertisedAddress        address peers are told to connect to; null (the default): the bind address, or this host's
 *                                 address when binding a wildcard
 * @param maxConnectionsPerPeer    concurrent connections to one peer; further transfers queue
 * @param sharedSecret             secret every peer must prove before the server reads a request, and that this
 *                                 side proves to the peers it connects to; null: no authentication. At least
 *                                 {@value #MIN_SHARED_SECRET_LENGTH} bytes (UTF-8)
 * @param sslContext               TLS for every connection, both ways, each side presenting its certificate and
 *                                 checking the other's against the context's trust material; null: plain TCP
 * @param idleTimeout              longest the server waits for a connection's next request (or its
 *                                 authentication) before closing it
 * @param readTimeout              longest a request in progress may make no progress before the server closes it
 * @param maxServerConnections     connections the server holds at once; handler threads are bounded by it
 * @param maxConnectionsPerAddress connections the server holds at once from one remote address
 * @param sameHostCopy             whether READs from a peer on this host copy its memory directly (cross-memory
 *                                 attach) where the OS allows it, and peers are granted such copies of this side's
 *                                 memory; false keeps every transfer on TCP
 * @param tcpStreams               connections one large transfer over TCP (64 MiB or more of host memory on this
 *                                 side) is striped over, 1 to {@value #MAX_TCP_STREAMS}, default
 *                                 {@value #DEFAULT_TCP_STREAMS}; 1: one connection per transfer. Never more than
 *                                 the peer's pool ({@link #maxConnectionsPerPeer}) has free when it starts
 * @param maxRangesPerRequest      most ranges the server takes in one request (1 to {@value #MAX_RANGES_PER_REQUEST},
 *                                 the protocol's limit and the default); a request of more is refused with an error
 *                                 naming this setting. A request's ranges must also all arrive, and be checked,
 *                                 within {@link #readTimeout}
 * @param peerIdleTimeout          longest a pooled connection to a peer stays open unused before this side closes
 *                                 it (default {@link #DEFAULT_PEER_IDLE_TIMEOUT}: shorter than the server's
 *                                 {@link #idleTimeout}, so the connecting side closes first). A pooled connection
 *                                 whose peer closed its end is closed sooner: the idle connections are checked
 *                                 every quarter of this timeout, at most every 250 ms
 * @param maxCachedPeers           peers (agent metadata) each agent keeps loaded; loading one more drops the least
 *                                 recently used (default {@value #DEFAULT_MAX_CACHED_PEERS}). A dropped peer is
 *                                 loaded again from its metadata by its next operation
 */
public record EmbeddedSettings(String bindAddress, int port, @Nullable String advertisedAddress, int maxConnectionsPerPeer,
        @Nullable String sharedSecret, @Nullable SSLContext sslContext, Duration idleTimeout, Duration readTimeout,
        int maxServerConnections, int maxConnectionsPerAddress, boolean sameHostCopy, int tcpStreams,
        int maxRangesPerRequest, Duration peerIdleTimeout, int maxCachedPeers)
        implements TransportSettings {

    /** The backend's name. */
    public static final String NAME = "embedded";
    /** Default for {@link #bindAddress}. */
    public static final String DEFAULT_BIND_ADDRESS = "127.0.0.1";
    /** Default for {@link #port}: any free port. */
    public static final int DEFAULT_PORT = 0;
    /** Default for {@link #maxConnectionsPerPeer}. */
    public static final int DEFAULT_MAX_CONNECTIONS_PER_PEER = 8;
    /** Default for {@link #idleTimeout}. */
    public static final Duration DEFAULT_IDLE_TIMEOUT = Duration.ofSeconds(60);
    /** Default for {@link #readTimeout}. */
    public static final Duration DEFAULT_READ_TIMEOUT = Duration.ofSeconds(30);
    /** Default for {@link #maxServerConnections}. */
    public static final int DEFAULT_MAX_SERVER_CONNECTIONS = 1024;
    /** Default for {@link #maxConnectionsPerAddress}. */
    public static final int DEFAULT_MAX_CONNECTIONS_PER_ADDRESS = 256;
    /**
     * Default for {@link #tcpStreams}: two connections. On a quiet 2-core machine two streams moved a 256 MiB READ
     * 1.25–1.8x faster than one at no more CPU per byte; on a busy one they gained little but cost nothing either
     * (docs/benchmarks-history.md). 1 keeps every transfer on one connection.
     */
    public static final int DEFAULT_TCP_STREAMS = 2;
    /** Most {@link #tcpStreams} accepted. */
    public static final int MAX_TCP_STREAMS = 16;
    /** Most (and default) {@link #maxRangesPerRequest}: the protocol's limit on one request's ranges. */
    public static final int MAX_RANGES_PER_REQUEST = Wire.MAX_RANGES;
    /** Default for {@link #maxRangesPerRequest}. */
    public static final int DEFAULT_MAX_RANGES_PER_REQUEST = MAX_RANGES_PER_REQUEST;
    /**
     * Default for {@link #peerIdleTimeout}: half the server's default {@link #DEFAULT_IDLE_TIMEOUT}, so that a peer's
     * server rarely closes a connection this side is about to reuse.
     */
    public static final Duration DEFAULT_PEER_IDLE_TIMEOUT = Duration.ofSeconds(30);
    /**
     * Default for {@link #maxCachedPeers}: a fleet of a few hundred peers stays loaded (each is a few hundred bytes:
     * a name, an endpoint and the metadata it came from).
     */
    public static final int DEFAULT_MAX_CACHED_PEERS = 512;
    /** Longest interval between two checks of the idle pooled connections for a peer that closed its end. */
    static final Duration MAX_PEER_CHECK_INTERVAL = Duration.ofMillis(250);
    /** Shortest accepted {@link #sharedSecret}, in bytes. */
    public static final int MIN_SHARED_SECRET_LENGTH = 16;

    public EmbeddedSettings {
        if (bindAddress == null || bindAddress.isBlank()) {
            throw new IllegalArgumentException("bindAddress must not be blank");
        }
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port must be 0..65535, was " + port);
        }
        advertisedAddress = advertisedAddress == null || advertisedAddress.isBlank() ? null : advertisedAddress;
        if (maxConnectionsPerPeer < 1) {
            throw new IllegalArgumentException("maxConnectionsPerPeer must be >= 1, was " + maxConnectionsPerPeer);
        }
        if (sharedSecret != null && sharedSecret.getBytes(StandardCharsets.UTF_8).length < MIN_SHARED_SECRET_LENGTH) {
            throw new IllegalArgumentException("sharedSecret must be at least " + MIN_SHARED_SECRET_LENGTH
                    + " bytes (use a long random value, the same on every peer), or null for none");
        }
        requirePositive(idleTimeout, "idleTimeout");
        requirePositive(readTimeout, "readTimeout");
        if (maxServerConnections < 1) {
            throw new IllegalArgumentException("maxServerConnections must be >= 1, was " + maxServerConnections);
        }
        if (maxConnectionsPerAddress < 1 || maxConnectionsPerAddress > maxServerConnections) {
            throw new IllegalArgumentException("maxConnectionsPerAddress must be 1..maxServerConnections ("
                    + maxServerConnections + "), was " + maxConnectionsPerAddress);
        }
        if (tcpStreams < 1 || tcpStreams > MAX_TCP_STREAMS) {
            throw new IllegalArgumentException("tcpStreams must be 1.." + MAX_TCP_STREAMS
                    + " (connections one large transfer is striped over; 1: one connection), was " + tcpStreams);
        }
        if (maxRangesPerRequest < 1 || maxRangesPerRequest > MAX_RANGES_PER_REQUEST) {
            throw new IllegalArgumentException("maxRangesPerRequest must be 1.." + MAX_RANGES_PER_REQUEST + ", was "
                    + maxRangesPerRequest);
        }
        requirePositive(peerIdleTimeout, "peerIdleTimeout");
        if (maxCachedPeers < 1) {
            throw new IllegalArgumentException("maxCachedPeers must be >= 1, was " + maxCachedPeers);
        }
    }

    /**
     * How often the idle pooled connections are checked for a peer that closed its end and for the idle limit: a
     * quarter of {@link #peerIdleTimeout}, at most {@code 250 ms}, at least {@code 5 ms}.
     */
    Duration peerCheckInterval() {
        Duration quarter = peerIdleTimeout.dividedBy(4);
        if (quarter.compareTo(MAX_PEER_CHECK_INTERVAL) > 0) {
            return MAX_PEER_CHECK_INTERVAL;
        }
        return quarter.toMillis() < 5 ? Duration.ofMillis(5) : quarter;
    }

    private static void requirePositive(Duration duration, String name) {
        if (duration == null || duration.isNegative() || duration.isZero()) {
            throw new IllegalArgumentException(name + " must be positive, was " + duration);
        }
    }

    /** These settings with peers authenticated by {@code secret} (null: none). */
    public EmbeddedSettings withSharedSecret(@Nullable String secret) {
        return new EmbeddedSettings(bindAddress, port, advertisedAddress, maxConnectionsPerPeer, secret, sslContext,
                idleTimeout, readTimeout, maxServerConnections, maxConnectionsPerAddress, sameHostCopy, tcpStreams, maxRangesPerRequest, peerIdleTimeout, maxCachedPeers);
    }

    /** These settings with every connection over TLS from {@code context} (null: plain TCP). */
    public EmbeddedSettings withSslContext(@Nullable SSLContext context) {
        return new EmbeddedSettings(bindAddress, port, advertisedAddress, maxConnectionsPerPeer, sharedSecret, context,
                idleTimeout, readTimeout, maxServerConnections, maxConnectionsPerAddress, sameHostCopy, tcpStreams, maxRangesPerRequest, peerIdleTimeout, maxCachedPeers);
    }

    /** These settings with the server's timeouts. */
    public EmbeddedSettings withTimeouts(Duration idle, Duration read) {
        return new EmbeddedSettings(bindAddress, port, advertisedAddress, maxConnectionsPerPeer, sharedSecret, sslContext,
                idle, read, maxServerConnections, maxConnectionsPerAddress, sameHostCopy, tcpStreams, maxRangesPerRequest, peerIdleTimeout, maxCachedPeers);
    }

    /** These settings with the server's connection limits. */
    public EmbeddedSettings withServerConnectionLimits(int maxConnections, int maxPerAddress) {
        return new EmbeddedSettings(bindAddress, port, advertisedAddress, maxConnectionsPerPeer, sharedSecret, sslContext,
                idleTimeout, readTimeout, maxConnections, maxPerAddress, sameHostCopy, tcpStreams, maxRangesPerRequest, peerIdleTimeout, maxCachedPeers);
    }

    /** Never prints the secret. */
    @Override
    public String toString() {
        return "EmbeddedSettings[bindAddress=" + bindAddress + ", port=" + port + ", advertisedAddress="
                + advertisedAddress + ", maxConnectionsPerPeer=" + maxConnectionsPerPeer + ", sharedSecret="
                + (sharedSecret == null ? "none" : "(set)") + ", tls=" + (sslContext != null) + ", idleTimeout="
                + idleTimeout + ", readTimeout=" + readTimeout + ", maxServerConnections=" + maxServerConnections
                + ", maxConnectionsPerAddress=" + maxConnectionsPerAddress + ", sameHostCopy=" + sameHostCopy
                + ", tcpStreams=" + tcpStreams + ", maxRangesPerRequest=" + maxRangesPerRequest + ", peerIdleTimeout="
                + peerIdleTimeout + ", maxCachedPeers=" + maxCachedPeers + "]";
    }

    /**
     * Loopback, a free port, at most {@value #DEFAULT_MAX_CONNECTIONS_PER_PEER} connections per peer, plain TCP
     * without authentication, the default server timeouts and connection limits, and the default peer lifecycle
     * (idle pooled connections closed after {@link #DEFAULT_PEER_IDLE_TIMEOUT}, at most
     * {@value #DEFAULT_MAX_CACHED_PEERS} peers loaded per agent).
     */
    public static EmbeddedSettings defaults() {
        return new EmbeddedSettings(DEFAULT_BIND_ADDRESS, DEFAULT_PORT, null, DEFAULT_MAX_CONNECTIONS_PER_PEER, null,
                null, DEFAULT_IDLE_TIMEOUT, DEFAULT_READ_TIMEOUT, DEFAULT_MAX_SERVER_CONNECTIONS,
                DEFAULT_MAX_CONNECTIONS_PER_ADDRESS, true, DEFAULT_TCP_STREAMS, DEFAULT_MAX_RANGES_PER_REQUEST,
                DEFAULT_PEER_IDLE_TIMEOUT, DEFAULT_MAX_CACHED_PEERS);
    }

    public EmbeddedSettings withBindAddress(String address) {
        return new EmbeddedSettings(address, port, advertisedAddress, maxConnectionsPerPeer, sharedSecret, sslContext,
                idleTimeout, readTimeout, maxServerConnections, maxConnectionsPerAddress, sameHostCopy, tcpStreams, maxRangesPerRequest, peerIdleTimeout, maxCachedPeers);
    }

    public EmbeddedSettings withPort(int newPort) {
        return new EmbeddedSettings(bindAddress, newPort, advertisedAddress, maxConnectionsPerPeer, sharedSecret,
                sslContext, idleTimeout, readTimeout, maxServerConnections, maxConnectionsPerAddress, sameHostCopy, tcpStreams, maxRangesPerRequest, peerIdleTimeout, maxCachedPeers);
    }

    /** {@code null} or blank: advertise the bind address (or this host's, for a wildcard bind). */
    public EmbeddedSettings withAdvertisedAddress(@Nullable String address) {
        return new EmbeddedSettings(bindAddress, port, address, maxConnectionsPerPeer, sharedSecret, sslContext,
                idleTimeout, readTimeout, maxServerConnections, maxConnectionsPerAddress, sameHostCopy, tcpStreams, maxRangesPerRequest, peerIdleTimeout, maxCachedPeers);
    }

    public EmbeddedSettings withMaxConnectionsPerPeer(int max) {
        return new EmbeddedSettings(bindAddress, port, advertisedAddress, max, sharedSecret, sslContext, idleTimeout,
                readTimeout, maxServerConnections, maxConnectionsPerAddress, sameHostCopy, tcpStreams, maxRangesPerRequest, peerIdleTimeout, maxCachedPeers);
    }

    /** Same-host copy allowed (the default) or every transfer kept on TCP. */
    public EmbeddedSettings withSameHostCopy(boolean allowed) {
        return new EmbeddedSettings(bindAddress, port, advertisedAddress, maxConnectionsPerPeer, sharedSecret, sslContext,
                idleTimeout, readTimeout, maxServerConnections, maxConnectionsPerAddress, allowed, tcpStreams, maxRangesPerRequest, peerIdleTimeout, maxCachedPeers);
    }

    /**
     * Large transfers over TCP striped over {@code streams} connections to their peer (1: each on one connection), so
     * that the kernel's copies of several connections run on several cores; see docs/architecture.md and
     * docs/benchmarks-history.md.
     */
    public EmbeddedSettings withTcpStreams(int streams) {
        return new EmbeddedSettings(bindAddress, port, advertisedAddress, maxConnectionsPerPeer, sharedSecret, sslContext,
                idleTimeout, readTimeout, maxServerConnections, maxConnectionsPerAddress, sameHostCopy, streams, maxRangesPerRequest, peerIdleTimeout, maxCachedPeers);
    }

    /** The server takes at most {@code max} ranges in one request (see {@link #maxRangesPerRequest}). */
    public EmbeddedSettings withMaxRangesPerRequest(int max) {
        return new EmbeddedSettings(bindAddress, port, advertisedAddress, maxConnectionsPerPeer, sharedSecret, sslContext,
                idleTimeout, readTimeout, maxServerConnections, maxConnectionsPerAddress, sameHostCopy, tcpStreams, max, peerIdleTimeout, maxCachedPeers);
    }

    /**
     * These settings with pooled connections closed after idling {@code idle} (see {@link #peerIdleTimeout}) and at
     * most {@code maxPeers} peers loaded per agent (see {@link #maxCachedPeers}).
     */
    public EmbeddedSettings withPeerLifecycle(Duration idle, int maxPeers) {
        return new EmbeddedSettings(bindAddress, port, advertisedAddress, maxConnectionsPerPeer, sharedSecret, sslContext,
                idleTimeout, readTimeout, maxServerConnections, maxConnectionsPerAddress, sameHostCopy, tcpStreams,
                maxRangesPerRequest, idle, maxPeers);
    }

    @Override
    public String name() {
        return NAME;
    }

    /** Starts the server on the configured address and port. */
    @Override
    public Transport open() {
        return EmbeddedTransport.open(this);
    }
}
