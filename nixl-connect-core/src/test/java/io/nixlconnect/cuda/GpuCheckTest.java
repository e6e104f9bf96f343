package io.nixlconnect.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.nixlconnect.TestTags;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The stand-alone check's outcome: "no GPU" here, every verdict passing on a GPU machine. */
@Tag(TestTags.GPU)
class GpuCheckTest {

    @Test
    void withoutAGpuTheCheckExitsWithTheNoGpuStatus() {
        assumeFalse(Cuda.isAvailable(), "this machine has a usable GPU");

        assertThat(smallCheck().run()).isEqualTo(GpuCheck.EXIT_NO_GPU);
    }

    @Test
    void onAGpuEveryCheckPasses() {
        assumeTrue(Cuda.isAvailable(), () -> "no GPU: " + Cuda.availability().reason());

        assertThat(smallCheck().run()).isEqualTo(GpuCheck.EXIT_PASSED);
    }

    /** Small buffers and few iterations: a quick run. */
    private static GpuCheck smallCheck() {
        return GpuCheck.withSizes(8L << 20, 2);
    }
}
