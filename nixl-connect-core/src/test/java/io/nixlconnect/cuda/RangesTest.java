package io.nixlconnect.cuda;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** Range checks done before any driver call; plain Java, runs everywhere. */
class RangesTest {

    @Test
    void acceptsRangesInsideTheBuffer() {
        assertThatCode(() -> {
            Ranges.checkWithin(64, 0, 64, "b");
            Ranges.checkWithin(64, 64, 0, "b");
            Ranges.checkWithin(Long.MAX_VALUE, Long.MAX_VALUE - 1, 1, "b");
        }).doesNotThrowAnyException();
    }

    @Test
    void rejectsRangesOutsideTheBufferWithoutOverflowing() {
        assertThatThrownBy(() -> Ranges.checkWithin(64, 1, 64, "buffer X"))
                .isInstanceOf(IndexOutOfBoundsException.class)
                .hasMessage("range [1, 1 + 64) lies outside buffer X of 64 bytes");
        assertThatThrownBy(() -> Ranges.checkWithin(64, -1, 1, "b")).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> Ranges.checkWithin(64, 65, 0, "b")).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> Ranges.checkWithin(64, 8, Long.MAX_VALUE, "b"))
                .isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> Ranges.checkWithin(64, 0, -1, "b")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void rejectsNullAddresses() {
        assertThatThrownBy(() -> Ranges.checkAddress("host", 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("host address must not be null (0)");
    }
}
