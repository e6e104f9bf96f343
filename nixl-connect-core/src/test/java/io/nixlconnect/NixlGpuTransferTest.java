package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.nixlconnect.transport.nixl.NixlSettings;
import java.nio.file.Path;
import org.junit.jupiter.api.Tag;
import io.nixlconnect.cuda.Cuda;
import io.nixlconnect.cuda.CudaDeviceBuffer;
import io.nixlconnect.cuda.CudaMemory;
import io.nixlconnect.cuda.GpuTests;
import io.nixlconnect.transport.TransportException;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * GPU memory registered with NIXL and moved by UCX between two agents: READ and WRITE, GPU to GPU and
 * between GPU and host memory, byte for byte. Needs NIXL ({@code NIXL_LIBRARY_DIR}) and a GPU; without a GPU
 * the transfer tests skip with the reason (or fail, when a GPU is required, see {@link GpuTests}) and the
 * refusal test runs instead.
 */
@Tag(TestTags.GPU)
@Tag(TestTags.NIXL)
class NixlGpuTransferTest {

    private static final String LIBRARY_DIR = System.getenv("NIXL_LIBRARY_DIR");
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final int SIZE = (8 << 20) + 13;

    private Connector passive;
    private Connector active;

    @BeforeEach
    void start() {
        if (LIBRARY_DIR == null || LIBRARY_DIR.isBlank()) {
            String reason = "NIXL_LIBRARY_DIR is not set: run `eval \"$(.ci/nixl-setup.sh)\"` to test against a real NIXL";
            if (GpuTests.gpuRequired()) {
                fail("VRAM over NIXL is part of a GPU run, but " + reason);
            }
            assumeTrue(false, reason);
        }
        ConnectorOptions.Builder options = ConnectorOptions.builder()
                .transports(NixlSettings.defaults().withLibraryDir(Path.of(LIBRARY_DIR)));
        passive = new Connector(options.workerId("nixl-gpu-passive").build());
        active = new Connector(options.workerId("nixl-gpu-active").build());
    }

    @AfterEach
    void stop() {
        if (active != null) {
            active.close();
        }
        if (passive != null) {
            passive.close();
        }
    }

    @Test
    void withoutAGpuGpuMemoryIsRefusedWithTheCause() {
        assumeFalse(Cuda.isAvailable(), "a GPU is present");
        try (Descriptor gpu = new Descriptor(1 << 20, 4096, "cuda:0", null)) {
            assertThatThrownBy(() -> passive.createReadable(gpu)).isInstanceOf(TransportFailureException.class)
                    .hasCauseInstanceOf(TransportException.class)
                    .hasMessageContaining("GPU support is unavailable")
                    .hasMessageContaining(Cuda.availability().reason());
        }
        assertThat(passive.registeredBytes()).isZero();
    }

    @Test
    void gpuToGpuReadIsByteExact() {
        CudaMemory cuda = GpuTests.requireGpu();
        byte[] data = TestData.random(SIZE);
        try (CudaDeviceBuffer source = cuda.allocate(0, SIZE); CudaDeviceBuffer target = cuda.allocate(otherDevice(cuda), SIZE)) {
            source.copyFrom(data, 0);
            try (Descriptor from = new Descriptor(source); Descriptor to = new Descriptor(target)) {
                ReadableOperation readable = passive.createReadable(from);
                active.beginRead(readable.metadata(), to).waitForCompletion(WAIT);
                readable.waitForCompletion(WAIT);
            }
            assertThat(bytesOf(target)).isEqualTo(data);
        }
        assertNothingRegistered();
    }

    @Test
    void gpuToGpuWriteIsByteExact() {
        CudaMemory cuda = GpuTests.requireGpu();
        byte[] data = TestData.random(SIZE);
        try (CudaDeviceBuffer source = cuda.allocate(0, SIZE); CudaDeviceBuffer target = cuda.allocate(otherDevice(cuda), SIZE)) {
            source.copyFrom(data, 0);
            try (Descriptor from = new Descriptor(source); Descriptor to = new Descriptor(target)) {
                WritableOperation writable = passive.createWritable(to);
                active.beginWrite(from, writable.metadata()).waitForCompletion(WAIT);
                writable.waitForCompletion(WAIT);
            }
            assertThat(bytesOf(target)).isEqualTo(data);
        }
        assertNothingRegistered();
    }

    @Test
    void hostToGpuByReadAndGpuToHostByWrite() {
        CudaMemory cuda = GpuTests.requireGpu();
        byte[] data = TestData.random(SIZE);
        try (CudaDeviceBuffer device = cuda.allocate(0, SIZE)) {
            try (Descriptor host = new Descriptor(data); Descriptor gpu = new Descriptor(device)) {
                ReadableOperation readable = passive.createReadable(host);
                active.beginRead(readable.metadata(), gpu).waitForCompletion(WAIT);
                readable.waitForCompletion(WAIT);
            }
            assertThat(bytesOf(device)).isEqualTo(data);

            try (Descriptor gpu = new Descriptor(device); Descriptor host = Descriptor.allocate(SIZE)) {
                WritableOperation writable = passive.createWritable(host);
                active.beginWrite(gpu, writable.metadata()).waitForCompletion(WAIT);
                writable.waitForCompletion(WAIT);
                assertThat(host.toByteArray()).isEqualTo(data);
            }
        }
        assertNothingRegistered();
    }

    @Test
    void gpuToHostByReadAndHostToGpuByWrite() {
        CudaMemory cuda = GpuTests.requireGpu();
        byte[] data = TestData.random(SIZE);
        try (CudaDeviceBuffer device = cuda.allocate(0, SIZE)) {
            device.copyFrom(data, 0);
            try (Descriptor gpu = new Descriptor(device); Descriptor host = Descriptor.allocate(SIZE)) {
                ReadableOperation readable = passive.createReadable(gpu);
                active.beginRead(readable.metadata(), host).waitForCompletion(WAIT);
                readable.waitForCompletion(WAIT);
                assertThat(host.toByteArray()).isEqualTo(data);
            }

            byte[] fresh = TestData.random(SIZE);
            try (Descriptor gpu = new Descriptor(device); Descriptor host = new Descriptor(fresh)) {
                WritableOperation writable = passive.createWritable(gpu);
                active.beginWrite(host, writable.metadata()).waitForCompletion(WAIT);
                writable.waitForCompletion(WAIT);
            }
            assertThat(bytesOf(device)).isEqualTo(fresh);
        }
        assertNothingRegistered();
    }

    @Test
    void aRegisteredGpuBufferCannotBeFreedUntilItsDescriptorCloses() {
        CudaMemory cuda = GpuTests.requireGpu();
        CudaDeviceBuffer device = cuda.allocate(0, 1 << 20);
        Descriptor descriptor = new Descriptor(device);
        descriptor.registerMemory(passive);

        assertThatThrownBy(device::close).isInstanceOf(IllegalStateException.class).hasMessageContaining("still registered");

        descriptor.close();
        device.close();
        assertThat(device.isClosed()).isTrue();
        assertNothingRegistered();
    }

    private void assertNothingRegistered() {
        assertThat(passive.registeredBytes()).isZero();
        assertThat(active.registeredBytes()).isZero();
    }

    private static int otherDevice(CudaMemory cuda) {
        return cuda.deviceCount() > 1 ? 1 : 0;
    }

    private static byte[] bytesOf(CudaDeviceBuffer buffer) {
        byte[] bytes = new byte[(int) buffer.size()];
        buffer.copyTo(0, bytes);
        return bytes;
    }
}
