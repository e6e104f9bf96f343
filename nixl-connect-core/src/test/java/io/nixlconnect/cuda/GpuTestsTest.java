package io.nixlconnect.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.opentest4j.AssertionFailedError;
import org.opentest4j.TestAbortedException;

/** The GPU-test guard: skip without a GPU, fail instead when the run requires one. */
class GpuTestsTest {

    private static final CudaAvailability NONE = CudaAvailability.unavailable("no NVIDIA driver: libcuda.so.1 missing");

    @Test
    void withoutTheSwitchAMissingGpuSkipsWithTheReason() {
        assertThatThrownBy(() -> GpuTests.requireGpu(NONE, false))
                .isInstanceOf(TestAbortedException.class)
                .hasMessageContaining("no GPU: no NVIDIA driver: libcuda.so.1 missing");
    }

    @Test
    void withTheSwitchAMissingGpuFailsNamingTheReasonAndTheSwitch() {
        assertThatThrownBy(() -> GpuTests.requireGpu(NONE, true))
                .isInstanceOf(AssertionFailedError.class)
                .hasMessageContaining("nixl.test.gpu.required=true")
                .hasMessageContaining("no NVIDIA driver: libcuda.so.1 missing");
    }

    @Test
    void aUsableGpuPassesEitherWay() {
        CudaAvailability one = CudaAvailability.withDevices(1);
        assertThatCode(() -> GpuTests.requireGpu(one, true)).doesNotThrowAnyException();
        assertThatCode(() -> GpuTests.requireGpu(one, false)).doesNotThrowAnyException();
    }

    @Test
    void theSwitchComesFromThePropertyElseTheEnvironment() {
        assertThat(GpuTests.gpuRequired(null, null)).isFalse();
        assertThat(GpuTests.gpuRequired("true", null)).isTrue();
        assertThat(GpuTests.gpuRequired("false", "1")).as("the property wins").isFalse();
        assertThat(GpuTests.gpuRequired(null, "1")).isTrue();
        assertThat(GpuTests.gpuRequired(null, "true")).isTrue();
        assertThat(GpuTests.gpuRequired(null, "0")).isFalse();
        assertThat(GpuTests.gpuRequired("", "1")).isTrue();
    }
}
