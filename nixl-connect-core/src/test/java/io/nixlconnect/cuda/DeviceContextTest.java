package io.nixlconnect.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

import org.junit.jupiter.api.Test;

/** The scope of an entered device context, on a test double of the driver layer (no GPU needed). */
class DeviceContextTest {

    private final List<Long> calls = new ArrayList<>();
    private final CudaTestDoubles.RecordingDriver driver = new CudaTestDoubles.RecordingDriver(calls);

    @Test
    void closingPopsWhatEnteringPushedOnce() {
        DeviceContext context = DeviceContext.enter(driver, 3);

        context.close();
        context.close();

        assertThat(context.deviceId()).isEqualTo(3);
        assertThat(calls).containsExactly(-4L, Long.MIN_VALUE);
    }

    @Test
    void closingOnAnotherThreadIsRefusedAndPopsNothing() throws Exception {
        DeviceContext context = DeviceContext.enter(driver, 0);

        ExecutionException refused = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
                () -> CompletableFuture.runAsync(context::close).get());

        assertThat(refused.getCause()).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("must be left on that thread");
        assertThat(calls).containsExactly(-1L);
        context.close();
        assertThat(calls).containsExactly(-1L, Long.MIN_VALUE);
    }

    @Test
    void theTestDoubleMovesNoMemory() {
        CudaDeviceBuffer buffer = CudaTestDoubles.deviceBuffer(0, 0x1000, 64, calls);

        assertThatThrownBy(() -> buffer.copyFrom(new byte[8], 0)).isInstanceOf(UnsupportedOperationException.class);
        assertThat(buffer.liveUses()).as("the failed copy gave its use back").isZero();
    }
}
