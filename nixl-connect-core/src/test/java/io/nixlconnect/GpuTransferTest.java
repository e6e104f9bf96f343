package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import io.nixlconnect.cuda.Cuda;
import io.nixlconnect.cuda.CudaDeviceBuffer;
import io.nixlconnect.cuda.CudaMemory;
import io.nixlconnect.cuda.GpuTests;
import io.nixlconnect.transport.TransportException;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * GPU descriptors on the embedded transport (staged through pinned host memory). The transfer tests need a
 * GPU and are skipped, with the reason, without one; the refusal test runs only without one.
 */
@Tag(TestTags.GPU)
class GpuTransferTest {

    private static final Duration WAIT = Duration.ofSeconds(60);

    private Connector passive;
    private Connector active;

    @BeforeEach
    void start() {
        ConnectorOptions.Builder options = ConnectorOptions.builder().transports(EmbeddedSettings.defaults());
        passive = new Connector(options.workerId("gpu-passive").build());
        active = new Connector(options.workerId("gpu-active").build());
    }

    @AfterEach
    void stop() {
        active.close();
        passive.close();
    }

    private static CudaMemory gpu() {
        return GpuTests.requireGpu();
    }

    @Test
    void withoutAGpuGpuDescriptorsAreRefusedWithTheCause() {
        assumeFalse(Cuda.isAvailable(), "a GPU is present");
        try (Descriptor gpu = new Descriptor(1 << 20, 4096, "cuda:0", null)) {
            assertThatThrownBy(() -> passive.createReadable(gpu)).isInstanceOf(TransportFailureException.class)
                    .hasCauseInstanceOf(TransportException.class)
                    .hasMessageContaining("GPU support is unavailable").hasMessageContaining(Cuda.availability().reason());
        }
        assertThat(passive.registeredBytes()).isZero();
        assertThat(passive.inFlightOperations()).isZero();
    }

    @Test
    void gpuToGpuReadAndWriteAreByteExact() {
        CudaMemory cuda = gpu();
        int size = (16 << 20) + 13;
        byte[] data = TestData.random(size);
        int other = cuda.deviceCount() > 1 ? 1 : 0;
        try (CudaDeviceBuffer source = cuda.allocate(0, size); CudaDeviceBuffer target = cuda.allocate(other, size)) {
            source.copyFrom(data, 0);
            Descriptor from = new Descriptor(source);
            Descriptor to = new Descriptor(target);
            assertThat(to.device()).isEqualTo(Device.cuda(other));
            assertThat(from.metadata().device()).isEqualTo("cuda:0");
            ReadableOperation readable = passive.createReadable(from);
            active.beginRead(readable.metadata(), to).waitForCompletion(WAIT);
            readable.waitForCompletion(WAIT);
            byte[] back = new byte[size];
            target.copyTo(0, back);
            assertThat(back).isEqualTo(data);

            byte[] fresh = TestData.random(size);
            target.copyFrom(fresh, 0);
            WritableOperation writable = passive.createWritable(from);
            active.beginWrite(to, writable.metadata()).waitForCompletion(WAIT);
            writable.waitForCompletion(WAIT);
            source.copyTo(0, back);
            assertThat(back).isEqualTo(fresh);
        }
        assertThat(passive.registeredBytes()).isZero();
        assertThat(active.registeredBytes()).isZero();
    }

    @Test
    void gpuAndHostMixAcrossPeers() {
        CudaMemory cuda = gpu();
        int size = 1 << 20;
        byte[] data = TestData.random(size);
        try (CudaDeviceBuffer device = cuda.allocate(0, size); Descriptor host = new Descriptor(data)) {
            Descriptor gpu = new Descriptor(device);
            ReadableOperation readable = passive.createReadable(host);
            active.beginRead(readable.metadata(), gpu).waitForCompletion(WAIT);
            byte[] back = new byte[size];
            device.copyTo(0, back);
            assertThat(back).isEqualTo(data);
        }
    }

    @Test
    void aGpuBufferInUseByALiveOperationCannotBeFreed() {
        CudaMemory cuda = gpu();
        try (CudaDeviceBuffer device = cuda.allocate(0, 4096)) {
            ReadableOperation readable = passive.createReadable(new Descriptor(device));
            assertThatThrownBy(device::close).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("live operation");
            readable.close();
        }
    }
}
