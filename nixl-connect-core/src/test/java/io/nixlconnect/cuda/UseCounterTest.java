package io.nixlconnect.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** The in-use bookkeeping behind {@link CudaBuffer#close()}; plain Java, runs everywhere. */
class UseCounterTest {

    private final UseCounter counter = new UseCounter(() -> "test buffer");

    @Test
    void closesOnceThenDoesNothing() {
        assertThat(counter.close()).isTrue();
        assertThat(counter.isClosed()).isTrue();
        assertThat(counter.close()).as("second close frees nothing").isFalse();
    }

    @Test
    void refusesToCloseWhileInUse() {
        LiveUse use = counter.acquireUse();

        assertThatThrownBy(counter::close)
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("Cannot close test buffer: it is still registered in a live operation (1 live use(s))");
        assertThat(counter.isClosed()).isFalse();

        use.close();
        assertThat(counter.close()).isTrue();
    }

    @Test
    void endingAUseTwiceReleasesItOnce() {
        LiveUse first = counter.acquireUse();
        LiveUse second = counter.acquireUse();

        first.close();
        first.close();

        assertThat(counter.liveUses()).isEqualTo(1);
        second.close();
        assertThat(counter.liveUses()).isZero();
    }

    @Test
    void refusesNewUsesOnceClosed() {
        counter.close();

        assertThatThrownBy(counter::acquireUse)
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("test buffer is closed");
    }

    @Test
    void refusesToReleaseAUseNeverAcquired() {
        assertThatThrownBy(counter::release).isInstanceOf(IllegalStateException.class);
    }
}
