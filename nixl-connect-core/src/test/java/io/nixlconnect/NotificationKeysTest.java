package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Keys drawn in blocks are still 128 random bits each, whatever block they come from. */
class NotificationKeysTest {

    @Test
    void keysAcrossManyBlocksAreDistinct32DigitHex() {
        Set<String> keys = new HashSet<>();
        Set<String> digitsAtEvenPlaces = new HashSet<>();
        Set<String> digitsAtOddPlaces = new HashSet<>();
        for (int i = 0; i < 1000; i++) { // about 16 blocks
            String key = new String(NotificationKeys.next(), StandardCharsets.US_ASCII);
            assertThat(key).matches("[0-9a-f]{32}").isNotEqualTo("0".repeat(32));
            keys.add(key);
            for (int j = 0; j < key.length(); j++) {
                (j % 2 == 0 ? digitsAtEvenPlaces : digitsAtOddPlaces).add(key.substring(j, j + 1));
            }
        }
        assertThat(keys).hasSize(1000);
        // Both halves of every random byte are written, as every hex digit.
        assertThat(digitsAtEvenPlaces).hasSize(16);
        assertThat(digitsAtOddPlaces).hasSize(16);
    }
}
