package io.nixlconnect.transport.embedded;

import java.nio.charset.StandardCharsets;

/**
 * A peer as an agent loaded it: its metadata; the bytes it was loaded from (to recognise them when loaded again,
 * without decoding them again); and, made once here rather than for every transfer, its agent name in UTF-8 (every
 * request carries it) and its {@code host:port} endpoint (its connection pool's key). Also when an operation last
 * loaded it, for the agent's bounded cache of peers (the least recently used is dropped first).
 */
final class LoadedPeer {

    private final EmbeddedMetadata metadata;
    private final byte[] loadedFrom;
    private final byte[] agentName;
    private final String endpoint;
    /** System.nanoTime of the last load; written without a lock by every operation that loads it (the last write wins). */
    private volatile long lastUsed = System.nanoTime();

    private LoadedPeer(EmbeddedMetadata metadata, byte[] loadedFrom, byte[] agentName, String endpoint) {
        this.metadata = metadata;
        this.loadedFrom = loadedFrom;
        this.agentName = agentName;
        this.endpoint = endpoint;
    }

    static LoadedPeer of(EmbeddedMetadata metadata, byte[] loadedFrom) {
        return new LoadedPeer(metadata, loadedFrom.clone(), metadata.agent().getBytes(StandardCharsets.UTF_8),
                metadata.host() + ":" + metadata.port());
    }

    EmbeddedMetadata metadata() {
        return metadata;
    }

    byte[] loadedFrom() {
        return loadedFrom;
    }

    byte[] agentName() {
        return agentName;
    }

    String endpoint() {
        return endpoint;
    }

    void used() {
        lastUsed = System.nanoTime();
    }

    long lastUsed() {
        return lastUsed;
    }
}
