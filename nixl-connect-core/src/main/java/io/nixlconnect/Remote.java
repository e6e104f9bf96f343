package io.nixlconnect;

/**
 * A peer agent loaded on a local {@link Connection}, for as long as this object is open. Closing it drops
 * its reference; the peer is unloaded when no operation needs it any more.
 */
public final class Remote implements AutoCloseable {

    private final Connection connection;
    private final String name;
    private boolean closed;

    /** Loads the peer from its raw agent metadata. */
    public Remote(Connection connection, byte[] nixlMetadata) {
        if (connection == null) {
            throw new IllegalArgumentException("Argument `connection` must not be null.");
        }
        if (nixlMetadata == null || nixlMetadata.length == 0) {
            throw new IllegalArgumentException("Argument `nixl_metadata` cannot be empty.");
        }
        int max = connection.connector().options().maxMetadataSize();
        if (nixlMetadata.length > max) {
            throw new IllegalArgumentException("Peer agent metadata of " + nixlMetadata.length
                    + " bytes exceeds the limit of " + max + " bytes (maxMetadataSize)");
        }
        this.connection = connection;
        this.name = connection.loadRemote(nixlMetadata);
    }

    /** Loads the peer from metadata as {@link RdmaMetadata#nixlMetadata()} carries it ({@code b64:…} or hex). */
    public Remote(Connection connection, String nixlMetadata) {
        this(connection, decode(nixlMetadata, connection));
    }

    private static byte[] decode(String encoded, Connection connection) {
        if (encoded == null || encoded.isEmpty()) {
            throw new IllegalArgumentException("Argument `nixl_metadata` cannot be empty.");
        }
        int max = connection == null ? RdmaMetadata.MAX_NIXL_METADATA_BYTES : connection.connector().options().maxMetadataSize();
        return NixlMetadataCodec.decode(encoded, max);
    }

    /** The peer's agent name. */
    public String name() {
        return name;
    }

    public Connection connection() {
        return connection;
    }

    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        connection.releaseRemoteRef(name);
    }

    @Override
    public String toString() {
        return "Remote[name=" + name + ", connection=" + connection.name() + "]";
    }
}
