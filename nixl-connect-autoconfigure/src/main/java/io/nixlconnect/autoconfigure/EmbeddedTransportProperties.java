package io.nixlconnect.autoconfigure;

import io.nixlconnect.transport.embedded.EmbeddedSettings;
import java.time.Duration;

/**
 * The properties of the embedded (pure-Java TCP) transport, {@code nixl.connect.embedded.*}, declared once: their
 * public type is {@link NixlConnectProperties.Embedded}, which adds nothing, so that {@link NixlConnectProperties}
 * holds the connector's own properties and each transport's stay in a file of their own. Every default is
 * {@link EmbeddedSettings}'s, read from there.
 */
abstract class EmbeddedTransportProperties {


    /** Address the embedded transport listens on. Loopback by default: set it to reach other hosts. */
    private String bindAddress = EmbeddedSettings.DEFAULT_BIND_ADDRESS;

    /** Port the embedded transport listens on; 0 picks a free port. */
    private int port = EmbeddedSettings.DEFAULT_PORT;

    /** Address peers use to reach this worker. Unset means the bind address (or this host's address for a wildcard bind). */
    private String advertisedAddress;

    /** Most connections opened to one peer at once; further transfers to it queue. */
    private int maxConnectionsPerPeer = EmbeddedSettings.DEFAULT_MAX_CONNECTIONS_PER_PEER;

    /**
     * Whether READs of more than 64 KiB from a peer on this host copy its memory directly (Linux cross-memory
     * attach, where the OS allows it; probed once per peer) instead of streaming it over TCP (smaller READs take
     * one round trip over TCP either way). False keeps every transfer on TCP.
     */
    private boolean sameHostCopy = true;

    /**
     * Connections one large transfer over TCP (64 MiB or more) is striped over, so that the copies of several
     * connections run on several cores; never more than the peer's pool has free when it starts. 1 to 16; 1
     * keeps each transfer on one connection.
     */
    private int tcpStreams = EmbeddedSettings.DEFAULT_TCP_STREAMS;

    /**
     * Secret every peer must prove (challenge-response, the secret never travels) before this worker reads its
     * requests, and that this worker proves to the peers it connects to. At least 16 bytes, the same on every
     * peer. Unset: no authentication.
     */
    private String sharedSecret;

    private final NixlConnectProperties.Embedded.Ssl ssl = new NixlConnectProperties.Embedded.Ssl();

    /** Longest the server waits for a connection's next request (or its authentication) before closing it. */
    private Duration idleTimeout = EmbeddedSettings.DEFAULT_IDLE_TIMEOUT;

    /** Longest a request in progress may make no progress before the server closes its connection. */
    private Duration readTimeout = EmbeddedSettings.DEFAULT_READ_TIMEOUT;

    /**
     * Connections the server holds at once; its handler threads are bounded by the same number. When full, the
     * connection that has waited longest for a request is closed to make room.
     */
    private int maxConnections = EmbeddedSettings.DEFAULT_MAX_SERVER_CONNECTIONS;

    /** Connections the server holds at once from one remote address (at most max-connections). */
    private int maxConnectionsPerAddress = EmbeddedSettings.DEFAULT_MAX_CONNECTIONS_PER_ADDRESS;

    /**
     * Most ranges the server takes in one request (1 to 1048576, the protocol's limit and the default); a request
     * of more is refused with an error naming this property. Every request's ranges must also arrive within
     * read-timeout.
     */
    private int maxRangesPerRequest = EmbeddedSettings.DEFAULT_MAX_RANGES_PER_REQUEST;

    /**
     * Longest a pooled connection to a peer stays open unused before this worker closes it (shorter than the peers'
     * idle-timeout, so that this side closes first). A pooled connection whose peer closed its end (the peer left)
     * is closed sooner: idle connections are checked every quarter of this, at most every 250 ms.
     */
    private Duration peerIdleTimeout = EmbeddedSettings.DEFAULT_PEER_IDLE_TIMEOUT;

    /**
     * Peers (agent metadata) each agent keeps loaded; loading one more drops the least recently used, which its next
     * operation loads again from its metadata.
     */
    private int maxCachedPeers = EmbeddedSettings.DEFAULT_MAX_CACHED_PEERS;

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

    public boolean isSameHostCopy() {
        return sameHostCopy;
    }

    public void setSameHostCopy(boolean sameHostCopy) {
        this.sameHostCopy = sameHostCopy;
    }

    public int getTcpStreams() {
        return tcpStreams;
    }

    public void setTcpStreams(int tcpStreams) {
        this.tcpStreams = tcpStreams;
    }

    public String getSharedSecret() {
        return sharedSecret;
    }

    public void setSharedSecret(String sharedSecret) {
        this.sharedSecret = sharedSecret;
    }

    public NixlConnectProperties.Embedded.Ssl getSsl() {
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

    public int getMaxRangesPerRequest() {
        return maxRangesPerRequest;
    }

    public void setMaxRangesPerRequest(int maxRangesPerRequest) {
        this.maxRangesPerRequest = maxRangesPerRequest;
    }

    public void setMaxConnectionsPerAddress(int maxConnectionsPerAddress) {
        this.maxConnectionsPerAddress = maxConnectionsPerAddress;
    }

    public Duration getPeerIdleTimeout() {
        return peerIdleTimeout;
    }

    public void setPeerIdleTimeout(Duration peerIdleTimeout) {
        this.peerIdleTimeout = peerIdleTimeout;
    }

    public int getMaxCachedPeers() {
        return maxCachedPeers;
    }

    public void setMaxCachedPeers(int maxCachedPeers) {
        this.maxCachedPeers = maxCachedPeers;
    }
}
