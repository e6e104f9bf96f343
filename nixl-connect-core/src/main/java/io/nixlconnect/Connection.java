package io.nixlconnect;

import io.nixlconnect.transport.TransportAgent;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * One transport agent of a {@link Connector}, named {@code <workerId>-<number>}: its memory registrations
 * and the peers it has loaded. A connector creates one connection and reuses it for every operation;
 * more are only needed to present several agents.
 *
 * <p>Read-only for applications: the connector creates it, and loads and releases peers through it. Peers are
 * reference-counted: a {@link Remote} holds a reference for as long as an operation needs the peer; the peer is
 * unloaded when the last reference goes, and reloaded when it presents changed metadata.
 */
public final class Connection {

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
    // The last local metadata published and its wire encoding: compressing it again for every passive operation
    // is wasted work while the agent's metadata has not changed.
    private byte[] publishedRaw;
    private String publishedEncoded;

    /**
     * @throws IllegalArgumentException if {@code number <= 0}
     */
    Connection(Connector connector, int number) {
        if (connector == null) {
            throw new IllegalArgumentException("connector must not be null");
        }
        if (number <= 0) {
            throw new IllegalArgumentException("number must be positive, was " + number);
        }
        this.connector = connector;
        this.number = number;
        this.name = connector.name() + "-" + number;
    }

    /** The agent's name, {@code <workerId>-<number>}: what peers know it by. */
    public String name() {
        return name;
    }

    /** This connection's number within its connector, from 1. */
    public int number() {
        return number;
    }

    /** The connector that owns it. */
    public Connector connector() {
        return connector;
    }

    /** Creates this connection's agent. Idempotent; every other method calls it as needed. */
    synchronized void initialize() {
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

    /**
     * The metadata a passive operation publishes: this agent's current metadata, encoded once for as long as it
     * does not change.
     */
    RdmaMetadata publish(List<SerializedDescriptor> descriptors, String notificationKey, OperationKind kind) {
        byte[] raw = metadata();
        String encoded;
        synchronized (this) {
            if (publishedRaw == null || !Arrays.equals(publishedRaw, raw)) {
                publishedRaw = raw;
                publishedEncoded = NixlMetadataCodec.encode(raw);
            }
            raw = publishedRaw;
            encoded = publishedEncoded;
        }
        return RdmaMetadata.ofEncoded(descriptors, raw, encoded, notificationKey, kind);
    }

    /** Adds a reference to an already loaded peer. */
    synchronized void acquireRemoteRef(String remoteName) {
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
    synchronized boolean releaseRemoteRef(String remoteName) {
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
     * @throws IllegalArgumentException if the metadata is empty or larger than the connector's maxMetadataSize
     */
    synchronized String loadRemote(byte[] metadata) {
        if (metadata == null || metadata.length == 0) {
            throw new IllegalArgumentException("peer agent metadata must not be empty");
        }
        int max = connector.options().maxMetadataSize();
        if (metadata.length > max) {
            throw new IllegalArgumentException("Peer agent metadata of " + metadata.length
                    + " bytes exceeds the limit of " + max + " bytes (maxMetadataSize)");
        }
        TransportAgent local = agent();
        String loadedName = remotesByMetadata.get(ByteBuffer.wrap(metadata));
        if (loadedName != null) {
            remotes.get(loadedName).references++;
            return loadedName;
        }
        // New or changed peer: the backend replaces a peer of the same name.
        String remoteName = local.loadRemoteAgent(metadata);
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
    void close() {
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
