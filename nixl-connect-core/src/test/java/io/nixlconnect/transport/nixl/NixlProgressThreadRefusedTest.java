package io.nixlconnect.transport.nixl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/**
 * NIXL's own progress thread is refused: with it on, closing a connector under transfers corrupted UCX's memory
 * (docs/nixl.md). Off stays the default, and any negative value means off.
 */
class NixlProgressThreadRefusedTest {

    @Test
    void theThreadIsOffByDefaultAndTurningItOnIsRefusedWithTheReason() {
        NixlSettings defaults = NixlSettings.defaults();
        assertThat(defaults.nixlProgressThreadDelayMicros()).isNegative()
                .isEqualTo(NixlSettings.DEFAULT_NIXL_PROGRESS_THREAD_DELAY_MICROS);
        assertThat(defaults.withNixlProgressThreadDelayMicros(-5).nixlProgressThreadDelayMicros()).isEqualTo(-5);
        for (long micros : new long[] {0, 10_000}) {
            assertThatThrownBy(() -> defaults.withNixlProgressThreadDelayMicros(micros))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("NIXL's own progress thread (nixlProgressThreadDelayMicros " + micros + ")")
                    .hasMessageContaining("not supported").hasMessageContaining("docs/nixl.md");
        }
    }
}
