package io.nixlconnect;

/**
 * A peer agent loaded on a local {@link Connection} for an operation. The connection's transport agent owns the
 * peer's lifetime: it stays loaded while transfers to it are in flight.
 */
public final class Remote {

    private final Connection connection;
    private final String name;

    /** Loads the peer from its raw agent metadata (the connection checks its size). */
    Remote(Connection connection, byte[] nixlMetadata) {
        this.connection = connection;
        this.name = connection.loadRemote(nixlMetadata);
    }

    /** The peer's agent name. */
    public String name() {
        return name;
    }

    /** The local connection the peer is loaded on. */
    public Connection connection() {
        return connection;
    }

    @Override
    public String toString() {
        return "Remote[name=" + name + ", connection=" + connection.name() + "]";
    }
}
