package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Keys drawn in blocks are still 128 random bits each, whatever block they come from. */
class NotificationKeysTest {

    @Test
    void keysAcrossManyBlocksAreDistinct32DigitHex() {
        Set<String> keys = new HashSet<>();
        for (int i = 0; i < 1000; i++) { // about 16 blocks
            String key = NotificationKeys.next();
            assertThat(key).matches("[0-9a-f]{32}").isNotEqualTo("0".repeat(32));
            keys.add(key);
        }
        assertThat(keys).hasSize(1000);
    }
}
