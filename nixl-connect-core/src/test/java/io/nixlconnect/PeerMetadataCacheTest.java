package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** A connection decodes each peer's envelope once, bounded, under its connector's limit. */
class PeerMetadataCacheTest {

    private static final int LIMIT = 1 << 20;

    @Test
    void theSameEnvelopeTextIsDecodedOnce() {
        PeerMetadataCache cache = new PeerMetadataCache(LIMIT);
        byte[] data = TestData.random(300);
        String encoded = NixlMetadataCodec.encode(data);
        byte[] first = cache.decode(encoded);
        assertThat(first).isEqualTo(data);
        assertThat(cache.decode(new String(encoded.toCharArray()))).isSameAs(first); // equal text, other string
    }

    @Test
    void eachConnectionDecodesForItself() {
        String encoded = NixlMetadataCodec.encode(TestData.random(300));
        assertThat(new PeerMetadataCache(LIMIT).decode(encoded)).isNotSameAs(new PeerMetadataCache(LIMIT).decode(encoded));
    }

    @Test
    void theLeastRecentlyUsedPeerIsForgottenBeyondTheCapacity() {
        PeerMetadataCache cache = new PeerMetadataCache(LIMIT);
        String first = NixlMetadataCodec.encode(TestData.random(100));
        String second = NixlMetadataCodec.encode(TestData.random(100));
        byte[] firstDecoded = cache.decode(first);
        byte[] secondDecoded = cache.decode(second);
        for (int i = 0; i < PeerMetadataCache.CAPACITY - 2; i++) {
            cache.decode(NixlMetadataCodec.encode(TestData.random(100)));
        }
        assertThat(cache.decode(first)).isSameAs(firstDecoded); // used again: now the most recent
        cache.decode(NixlMetadataCodec.encode(TestData.random(100))); // one more than the capacity
        assertThat(cache.decode(first)).isSameAs(firstDecoded);
        assertThat(cache.decode(second)).isEqualTo(secondDecoded).isNotSameAs(secondDecoded);
    }

    @Test
    void largeAgentMetadataIsNotKept() {
        PeerMetadataCache cache = new PeerMetadataCache(LIMIT);
        String encoded = NixlMetadataCodec.encode(TestData.random(PeerMetadataCache.MAX_KEPT_BYTES + 1));
        assertThat(cache.decode(encoded)).isNotSameAs(cache.decode(encoded));
    }

    @Test
    void theConnectorsLimitApplies() {
        String encoded = NixlMetadataCodec.encode(TestData.random(300));
        new PeerMetadataCache(LIMIT).decode(encoded);
        assertThatThrownBy(() -> new PeerMetadataCache(299).decode(encoded)).isInstanceOf(InvalidMetadataException.class)
                .hasMessageContaining("more than 299 bytes");
    }
}
