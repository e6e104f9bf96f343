package io.nixlconnect;

import io.nixlconnect.transport.InvalidAgentMetadataException;
import io.nixlconnect.transport.TransportAgent;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;

/**
 * One transport agent of a {@link Connector}, named {@code <workerId>-<number>}: its memory registrations
 * and the peers it has loaded. A connector creates one connection and reuses it for every operation;
 * more are only needed to present several agents.
 *
 * <p>Peers are reference-counted: {@link Remote} acquires a reference for as long as an operation needs
 * the peer; the peer is unloaded when the last reference goes, and reloaded when it presents changed
 * metadata.
 */
public final class Connection implements AutoCloseable {

    private final Connector connector;
    private final int number;
    private final String name;
    private final Map<String, RemoteAgent> remotes = new HashMap<>();
    // The loaded peers by metadata (content equality): every operation looks its peer up, in one step
    // however many peers are loaded.
    private final Map<ByteBuffer, String> remotesByMetadata = new HashMap<>();
    private TransportAgent agent;
    private RegistrationCache registrations;
    private boolean closed;

    /**
     * @throws IllegalArgumentException if {@code number <= 0}
     */
    public Connection(Connector connector, int number) {
        if (connector == null) {
            throw new IllegalArgumentException("Argument `connector` must not be null.");
        }
        if (number <= 0) {
            throw new IllegalArgumentException("Argument `number` must be a positive integer, was " + number + ".");
        }
        this.connector = connector;
        this.number = number;
        this.name = connector.name() + "-" + number;
    }

    public String name() {
        return name;
    }

    public int number() {
        return number;
    }

    public Connector connector() {
        return connector;
    }

    /** Creates this connection's agent. Idempotent; every other method calls it as needed. */
    public synchronized void initialize() {
        if (closed) {
            throw new IllegalStateException("Connection " + name + " is closed");
        }
        if (agent == null) {
            agent = connector.createAgent(this);
            registrations = new RegistrationCache(agent);
        }
    }

    /** This agent's metadata (raw, not encoded): what a peer loads to reach it. */
    public byte[] metadata() {
        return agent().localMetadata();
    }

    /** Adds a reference to an already loaded peer. */
    public synchronized void acquireRemoteRef(String remoteName) {
        RemoteAgent remote = remotes.get(remoteName);
        if (remote == null) {
            throw new IllegalStateException("No remote agent named '" + remoteName + "' is loaded on " + name);
        }
        remote.references++;
    }

    /**
     * Drops a reference to a peer; the last one unloads it.
     *
     * @return true when that was the last reference and the peer was unloaded
     */
    public synchronized boolean releaseRemoteRef(String remoteName) {
        RemoteAgent remote = remotes.get(remoteName);
        if (remote == null || --remote.references > 0) {
            return false;
        }
        remotes.remove(remoteName);
        remotesByMetadata.remove(ByteBuffer.wrap(remote.metadata));
        // Unload under the lock: a concurrent loadRemote of the same peer must not be undone by this unload.
        if (agent != null && !closed) {
            agent.unloadRemoteAgent(remoteName);
        }
        return true;
    }

    /** Number of peers currently loaded. */
    public synchronized int remoteAgentCount() {
        return remotes.size();
    }

    /** Bytes of local memory currently registered through this connection. */
    public long registeredBytes() {
        RegistrationCache cache;
        synchronized (this) {
            cache = registrations;
        }
        return cache == null ? 0 : cache.registeredBytes();
    }

    /**
     * Loads a peer (or reuses it when already loaded with identical metadata) and takes a reference.
     *
     * @return the peer's agent name
     */
    synchronized String loadRemote(byte[] metadata) {
        TransportAgent local = agent();
        String loadedName = remotesByMetadata.get(ByteBuffer.wrap(metadata));
        if (loadedName != null) {
            remotes.get(loadedName).references++;
            return loadedName;
        }
        // New or changed peer: the backend replaces a peer of the same name.
        String remoteName;
        try {
            remoteName = local.loadRemoteAgent(metadata);
        } catch (InvalidAgentMetadataException e) {
            throw new InvalidMetadataException("nixl_metadata", "holds agent metadata that the transport refuses ("
                    + e.getMessage() + ")", e);
        }
        byte[] copy = metadata.clone();
        RemoteAgent known = remotes.get(remoteName);
        if (known != null) {
            remotesByMetadata.remove(ByteBuffer.wrap(known.metadata));
            known.metadata = copy;
            known.references++;
        } else {
            remotes.put(remoteName, new RemoteAgent(copy));
        }
        remotesByMetadata.put(ByteBuffer.wrap(copy), remoteName);
        return remoteName;
    }

    synchronized TransportAgent agent() {
        initialize();
        return agent;
    }

    synchronized RegistrationCache registrations() {
        initialize();
        return registrations;
    }

    synchronized boolean isServing() {
        return agent != null && !closed && agent.isServing();
    }

    /** Closes the agent: deregisters all memory and unloads all peers. Idempotent. */
    @Override
    public void close() {
        TransportAgent toClose;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            toClose = agent;
            remotes.clear();
            remotesByMetadata.clear();
            if (registrations != null) {
                registrations.clear();
            }
        }
        if (toClose != null) {
            toClose.close();
        }
        connector.connectionClosed(this);
    }

    @Override
    public String toString() {
        return "Connection[" + name + "]";
    }

    private static final class RemoteAgent {
        byte[] metadata;
        int references = 1;

        RemoteAgent(byte[] metadata) {
            this.metadata = metadata;
        }
    }
}
