package io.nixlconnect.transport.embedded;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nixlconnect.transport.TransportException;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** Agent metadata round trips, through the ASCII fast path and the general reader alike. */
class EmbeddedMetadataTest {

    @Test
    void roundTripsAsciiAndOtherNames() {
        for (EmbeddedMetadata metadata : new EmbeddedMetadata[] {
                new EmbeddedMetadata("worker-1", "127.0.0.1", 4242),
                new EmbeddedMetadata("wörker-é-1", "hôte", 1), // non-ASCII: the general reader
                new EmbeddedMetadata("nul\0inside", "::1", 65535)}) { // NUL: two bytes in modified UTF-8
            assertThat(EmbeddedMetadata.decode(metadata.encode())).isEqualTo(metadata);
        }
    }

    @Test
    void trailingBytesAreIgnoredAsBefore() {
        byte[] encoded = new EmbeddedMetadata("w", "h", 7).encode();
        assertThat(EmbeddedMetadata.decode(Arrays.copyOf(encoded, encoded.length + 3)))
                .isEqualTo(new EmbeddedMetadata("w", "h", 7));
    }

    @Test
    void malformedMetadataIsRefusedWithTheGeneralReadersMessages() {
        byte[] encoded = new EmbeddedMetadata("worker", "host", 80).encode();
        assertThatThrownBy(() -> EmbeddedMetadata.decode(Arrays.copyOf(encoded, encoded.length - 2)))
                .isInstanceOf(TransportException.class).hasMessageContaining("truncated or malformed");
        byte[] badPort = encoded.clone();
        badPort[badPort.length - 1] = 0;
        badPort[badPort.length - 2] = 0;
        assertThatThrownBy(() -> EmbeddedMetadata.decode(badPort)).hasMessageContaining("port 0");
        byte[] notOurs = encoded.clone();
        notOurs[0] = 'X';
        assertThatThrownBy(() -> EmbeddedMetadata.decode(notOurs)).hasMessageContaining("not from an embedded-transport peer");
    }
}
