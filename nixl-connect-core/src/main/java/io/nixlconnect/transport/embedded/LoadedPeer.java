package io.nixlconnect.transport.embedded;

import java.nio.charset.StandardCharsets;

/**
 * A peer as an agent loaded it: its metadata; the bytes it was loaded from (to recognise them when loaded again,
 * without decoding them again); and, made once here rather than for every transfer, its agent name in UTF-8 (every
 * request carries it) and its {@code host:port} endpoint (its connection pool's key).
 */
record LoadedPeer(EmbeddedMetadata metadata, byte[] loadedFrom, byte[] agentName, String endpoint) {

    static LoadedPeer of(EmbeddedMetadata metadata, byte[] loadedFrom) {
        return new LoadedPeer(metadata, loadedFrom.clone(), metadata.agent().getBytes(StandardCharsets.UTF_8),
                metadata.host() + ":" + metadata.port());
    }
}
