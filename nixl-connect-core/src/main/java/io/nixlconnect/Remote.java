package io.nixlconnect;

/**
 * A peer agent loaded on a local {@link Connection}, for as long as an operation needs it. Created and released
 * by the operation; the peer is unloaded when no operation needs it any more.
 */
public final class Remote {

    private final Connection connection;
    private final String name;
    private boolean released;

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

    /** Drops this operation's reference to the peer. Idempotent. */
    void release() {
        synchronized (this) {
            if (released) {
                return;
            }
            released = true;
        }
        connection.releaseRemoteRef(name);
    }

    @Override
    public String toString() {
        return "Remote[name=" + name + ", connection=" + connection.name() + "]";
    }
}
