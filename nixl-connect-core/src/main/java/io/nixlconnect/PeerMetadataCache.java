package io.nixlconnect;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The agent metadata of the peers one connection reached lately, decoded once per envelope text: a peer's envelope
 * repeats in every operation it publishes. The bytes are shared: read-only (the transport agent only reads them).
 * Bounded: at most {@value #CAPACITY} peers, the least recently used forgotten first, and only envelopes that decode
 * to at most {@value #MAX_KEPT_BYTES} bytes are kept.
 */
final class PeerMetadataCache {

    static final int CAPACITY = 16;
    static final int MAX_KEPT_BYTES = 16 * 1024;

    private final int maxBytes;
    private final Map<String, byte[]> recent = new LinkedHashMap<>(32, 0.75f, true) {
        private static final long serialVersionUID = 1L;

        @Override
        protected boolean removeEldestEntry(Map.Entry<String, byte[]> eldest) {
            return size() > CAPACITY;
        }
    };

    /** @param maxBytes the connector's {@code maxMetadataSize}: no envelope decodes to more */
    PeerMetadataCache(int maxBytes) {
        this.maxBytes = maxBytes;
    }

    /**
     * The agent metadata {@code encoded} holds, read-only.
     *
     * @throws InvalidMetadataException if it does not decode, or decodes to more than {@code maxBytes}
     */
    byte[] decode(String encoded) {
        synchronized (recent) {
            byte[] known = recent.get(encoded);
            if (known != null) {
                return known;
            }
        }
        byte[] decoded = NixlMetadataCodec.decode(encoded, maxBytes);
        if (decoded.length <= MAX_KEPT_BYTES) {
            synchronized (recent) {
                recent.put(encoded, decoded);
            }
        }
        return decoded;
    }
}
