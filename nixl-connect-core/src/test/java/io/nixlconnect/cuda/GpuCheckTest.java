package io.nixlconnect.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import io.nixlconnect.TestTags;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The stand-alone check's outcome: "no GPU" (or "GPU expected") here, every verdict passing on a GPU machine. */
@Tag(TestTags.GPU)
class GpuCheckTest {

    @Test
    void withoutAGpuTheCheckExitsWithTheNoGpuStatus() {
        assumeFalse(Cuda.isAvailable(), "this machine has a usable GPU");

        assertThat(smallCheck(false).run()).isEqualTo(GpuCheck.EXIT_NO_GPU);
    }

    @Test
    void withoutAGpuWhereOneIsExpectedTheCheckExitsWithItsOwnStatus() {
        assumeFalse(Cuda.isAvailable(), "this machine has a usable GPU");

        assertThat(smallCheck(true).run()).isEqualTo(GpuCheck.EXIT_GPU_EXPECTED)
                .isNotIn(GpuCheck.EXIT_NO_GPU, GpuCheck.EXIT_FAILED, GpuCheck.EXIT_PASSED);
    }

    @Test
    void onAGpuEveryCheckPasses() {
        GpuTests.requireGpu();

        assertThat(smallCheck(true).run()).isEqualTo(GpuCheck.EXIT_PASSED);
    }

    /** Small buffers and few iterations: a quick run. */
    private static GpuCheck smallCheck(boolean gpuRequired) {
        return GpuCheck.withSizes(8L << 20, 2, gpuRequired);
    }
}
