package io.nixlconnect.transport.embedded;

/**
 * Settings of the embedded transport.
 *
 * @param bindAddress           address the server listens on (default loopback)
 * @param port                  port, 0 for an ephemeral one
 * @param advertisedAddress     address peers are told to connect to; null: the bind address, or this host's
 *                              address when binding a wildcard
 * @param maxConnectionsPerPeer concurrent connections to one peer; further transfers queue
 * @param sameHostCopy          whether a peer on the same host may be read directly, with one copy (Linux
 *                              cross-memory attach, where the OS allows it; TCP otherwise). False: always TCP,
 *                              in both directions (this side neither copies directly nor grants peers to)
 */
public record EmbeddedSettings(String bindAddress, int port, String advertisedAddress, int maxConnectionsPerPeer,
        boolean sameHostCopy) {

    /** Default for {@link #maxConnectionsPerPeer}. */
    public static final int DEFAULT_MAX_CONNECTIONS_PER_PEER = 8;

    public EmbeddedSettings(String bindAddress, int port, String advertisedAddress) {
        this(bindAddress, port, advertisedAddress, DEFAULT_MAX_CONNECTIONS_PER_PEER);
    }

    /** Same-host copy on where the OS allows it. */
    public EmbeddedSettings(String bindAddress, int port, String advertisedAddress, int maxConnectionsPerPeer) {
        this(bindAddress, port, advertisedAddress, maxConnectionsPerPeer, true);
    }

    public EmbeddedSettings {
        if (bindAddress == null || bindAddress.isBlank()) {
            throw new IllegalArgumentException("bindAddress must not be blank");
        }
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port must be 0..65535, was " + port);
        }
        if (maxConnectionsPerPeer < 1) {
            throw new IllegalArgumentException("maxConnectionsPerPeer must be >= 1, was " + maxConnectionsPerPeer);
        }
    }
}
