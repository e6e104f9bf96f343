package io.nixlconnect;

import io.nixlconnect.transport.InvalidAgentMetadataException;
import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.PeerCounts;
import io.nixlconnect.transport.TransportAgent;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * One transport agent of a {@link Connector}, named {@code <workerId>-<number>}: its memory registrations
 * and the peers it has loaded. A connector creates one and reuses it for every operation.
 *
 * <p>Internal: Python Dynamo exposes its {@code Connection}, but a caller there does nothing with it either (the
 * connector creates it and loads peers through it); what a caller may want to know — the agent's peer count and
 * registered bytes — {@link Connector#remoteAgentCount()} and {@link Connector#registeredBytes()} report. The
 * transport agent owns the peers' lifetime (loading the same metadata again is a lookup there; it unloads when it
 * chooses), so nothing here can unload a peer under a live transfer.
 */
final class Connection {

    private final Connector connector;
    private final int number;
    private final String name;
    private TransportAgent agent;
    private RegistrationCache registrations;
    private boolean closed;
    // The last local metadata published and its wire encoding: compressing it again for every passive operation
    // is wasted work while the agent's metadata has not changed.
    private byte[] publishedRaw;
    private String publishedEncoded;
    private final SpentWindows spentWindows = new SpentWindows();
    private final PeerMetadataCache peerMetadata;

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
        this.peerMetadata = new PeerMetadataCache(connector.options().maxMetadataSize());
    }

    /** The agent's name, {@code <workerId>-<number>}: what peers know it by. */
    String name() {
        return name;
    }

    /** This connection's number within its connector, from 1. */
    int number() {
        return number;
    }

    /** The connector that owns it. */
    Connector connector() {
        return connector;
    }

    /** Creates this connection's agent. Idempotent; every other method calls it as needed. */
    synchronized void initialize() {
        if (closed) {
            // Only the connector's close closes it: an operation that raced that close learns so, as on every backend.
            throw new ConnectorClosedException("Connector '" + connector.name() + "' is closed (its connection " + name
                    + " is closed); no new operations are accepted");
        }
        if (agent == null) {
            agent = connector.createAgent(this);
            registrations = new RegistrationCache(agent, connector.backendName());
        }
    }

    /** This agent's metadata (raw, not encoded): what a peer loads to reach it. */
    byte[] metadata() {
        return agent().localMetadata();
    }

    /**
     * The metadata a passive operation publishes: this agent's current metadata, encoded once for as long as it
     * does not change.
     */
    RdmaMetadata publish(List<SerializedDescriptor> descriptors, List<MemoryRegion> registered, String notificationKey,
            OperationKind kind) {
        TransportAgent current = agent();
        byte[] known;
        synchronized (this) {
            known = publishedRaw;
        }
        byte[] raw = known != null && current.localMetadataEquals(known, registered) ? known
                : current.localMetadata(registered);
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

    /** The peers' windows this connection's transfers have completed with (spent metadata is refused). */
    SpentWindows spentWindows() {
        return spentWindows;
    }

    /**
     * A peer's agent metadata out of its envelope, under the connector's {@code maxMetadataSize}; read-only (shared
     * with this connection's other operations on that peer).
     *
     * @throws InvalidMetadataException if it does not decode or is too large
     */
    byte[] peerMetadata(String encoded) {
        return peerMetadata.decode(encoded);
    }

    /** This agent's metadata for a peer whose transfers stay within {@code registered}: see {@link TransportAgent#localMetadata(List)}. */
    byte[] metadata(List<MemoryRegion> registered) {
        return agent().localMetadata(registered);
    }

    /** Number of peers the agent holds loaded. */
    int remoteAgentCount() {
        TransportAgent loaded;
        synchronized (this) {
            loaded = closed ? null : agent;
        }
        return loaded == null ? 0 : loaded.remoteAgentCount();
    }

    /** How the agent holds its peers; null before the agent exists or once closed. */
    PeerCounts peerCounts() {
        TransportAgent loaded;
        synchronized (this) {
            loaded = closed ? null : agent;
        }
        return loaded == null ? null : loaded.peerCounts();
    }

    /** Bytes of local memory currently registered through this connection. */
    long registeredBytes() {
        RegistrationCache cache;
        synchronized (this) {
            cache = registrations;
        }
        return cache == null ? 0 : cache.registeredBytes();
    }

    /**
     * Loads a peer for a transfer (the agent makes this a lookup when it already holds the same metadata).
     *
     * @return the peer's agent name
     * @throws IllegalArgumentException if the metadata is empty or larger than the connector's maxMetadataSize
     */
    String loadRemote(byte[] metadata) {
        if (metadata == null || metadata.length == 0) {
            throw new IllegalArgumentException("peer agent metadata must not be empty");
        }
        int max = connector.options().maxMetadataSize();
        if (metadata.length > max) {
            throw new IllegalArgumentException("Peer agent metadata of " + metadata.length
                    + " bytes exceeds the limit of " + max + " bytes (maxMetadataSize)");
        }
        try {
            return agent().loadRemoteAgent(metadata);
        } catch (InvalidAgentMetadataException e) {
            throw new InvalidMetadataException("nixl_metadata", "holds agent metadata that the transport refuses ("
                    + e.getMessage() + ")", e);
        }
    }

    /**
     * Introduces a peer ahead of its first operation ({@link TransportAgent#introducePeer}), under the same checks as
     * {@link #loadRemote}; the future completes with its agent name.
     *
     * @throws InvalidMetadataException if the transport refuses the metadata
     */
    CompletableFuture<String> introduce(byte[] metadata) {
        try {
            return agent().introducePeer(metadata);
        } catch (InvalidAgentMetadataException e) {
            throw new InvalidMetadataException("nixl_metadata", "holds agent metadata that the transport refuses ("
                    + e.getMessage() + ")", e);
        }
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
}
