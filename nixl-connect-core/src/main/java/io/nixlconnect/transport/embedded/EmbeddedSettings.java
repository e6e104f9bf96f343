package io.nixlconnect.transport.embedded;

import io.nixlconnect.transport.Transport;
import io.nixlconnect.transport.TransportSettings;

/**
 * Settings of the embedded (pure-Java TCP) transport; every default is defined here, once. Start from
 * {@link #defaults()} and change what differs with the {@code with…} methods.
 *
 * @param bindAddress           address the server listens on (default {@value #DEFAULT_BIND_ADDRESS}: loopback)
 * @param port                  port, 0 (the default) for an ephemeral one
 * @param advertisedAddress     address peers are told to connect to; null (the default): the bind address, or
 *                              this host's address when binding a wildcard
 * @param maxConnectionsPerPeer concurrent connections to one peer; further transfers queue
 */
public record EmbeddedSettings(String bindAddress, int port, String advertisedAddress, int maxConnectionsPerPeer)
        implements TransportSettings {

    /** The backend's name. */
    public static final String NAME = "embedded";
    /** Default for {@link #bindAddress}. */
    public static final String DEFAULT_BIND_ADDRESS = "127.0.0.1";
    /** Default for {@link #port}: any free port. */
    public static final int DEFAULT_PORT = 0;
    /** Default for {@link #maxConnectionsPerPeer}. */
    public static final int DEFAULT_MAX_CONNECTIONS_PER_PEER = 8;

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
    }

    /** Loopback, a free port, at most {@value #DEFAULT_MAX_CONNECTIONS_PER_PEER} connections per peer. */
    public static EmbeddedSettings defaults() {
        return new EmbeddedSettings(DEFAULT_BIND_ADDRESS, DEFAULT_PORT, null, DEFAULT_MAX_CONNECTIONS_PER_PEER);
    }

    public EmbeddedSettings withBindAddress(String address) {
        return new EmbeddedSettings(address, port, advertisedAddress, maxConnectionsPerPeer);
    }

    public EmbeddedSettings withPort(int newPort) {
        return new EmbeddedSettings(bindAddress, newPort, advertisedAddress, maxConnectionsPerPeer);
    }

    /** {@code null} or blank: advertise the bind address (or this host's, for a wildcard bind). */
    public EmbeddedSettings withAdvertisedAddress(String address) {
        return new EmbeddedSettings(bindAddress, port, address, maxConnectionsPerPeer);
    }

    public EmbeddedSettings withMaxConnectionsPerPeer(int max) {
        return new EmbeddedSettings(bindAddress, port, advertisedAddress, max);
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
