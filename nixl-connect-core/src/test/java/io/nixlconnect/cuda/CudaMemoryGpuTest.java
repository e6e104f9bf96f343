package io.nixlconnect.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.sun.jna.Native;
import com.sun.jna.Pointer;
import io.nixlconnect.TestTags;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** Real allocations and copies; skipped, with the reason, without a usable GPU (failed when one is required, see {@link GpuTests}). */
@Tag(TestTags.GPU)
class CudaMemoryGpuTest {

    private static final int SIZE = 3 * 1024 * 1024 + 17; // odd on purpose: no alignment luck
    private static CudaMemory cuda;
    private static ExecutorService otherThreads;

    /** Per test rather than per class, so that each test is reported as skipped with the reason. */
    @BeforeEach
    void requireGpu() {
        cuda = GpuTests.requireGpu();
        if (otherThreads == null) {
            otherThreads = Executors.newFixedThreadPool(2);
        }
    }

    @AfterAll
    static void stopThreads() throws InterruptedException {
        if (otherThreads != null) {
            otherThreads.shutdown();
            otherThreads.awaitTermination(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void listsTheDevices() {
        assertThat(cuda.devices()).hasSize(cuda.deviceCount()).isNotEmpty();
        for (CudaDevice device : cuda.devices()) {
            assertThat(device.name()).isNotBlank();
            assertThat(device.totalMemory()).isPositive();
            assertThat(device.computeCapabilityMajor()).isGreaterThanOrEqualTo(3);
            assertThat(cuda.device(device.id())).isEqualTo(device);
        }
    }

    @Test
    void byteArraysRoundTripExactly() {
        byte[] data = randomBytes(SIZE, 1);
        try (CudaDeviceBuffer buffer = cuda.allocate(0, SIZE)) {
            buffer.copyFrom(data, 0);
            byte[] back = new byte[SIZE];
            buffer.copyTo(0, back);
            assertThat(back).isEqualTo(data);
        }
    }

    @Test
    void arraySlicesLandAtTheirOffsets() {
        byte[] data = randomBytes(1000, 2);
        try (CudaDeviceBuffer buffer = cuda.allocate(0, 4096)) {
            buffer.copyFrom(data, 100, 500, 1000);
            byte[] back = new byte[700];
            buffer.copyTo(1000, back, 200, 500);
            assertThat(Arrays.copyOfRange(back, 200, 700))
                    .isEqualTo(Arrays.copyOfRange(data, 100, 600));
        }
    }

    @Test
    void byteBuffersOfEveryKindRoundTripExactlyAndAdvance() {
        byte[] data = randomBytes(SIZE, 3);
        ByteBuffer[] sources = {
                ByteBuffer.allocateDirect(SIZE).put(data).flip(),
                ByteBuffer.wrap(data),
                ByteBuffer.wrap(data).asReadOnlyBuffer(),
        };
        try (CudaDeviceBuffer buffer = cuda.allocate(0, SIZE)) {
            for (ByteBuffer source : sources) {
                buffer.copyFrom(source, 0);
                assertThat(source.hasRemaining()).isFalse();

                for (ByteBuffer back : new ByteBuffer[] {ByteBuffer.allocateDirect(SIZE), ByteBuffer.allocate(SIZE)}) {
                    buffer.copyTo(0, back);
                    assertThat(back.hasRemaining()).isFalse();
                    assertThat(bytesOf(back.flip())).isEqualTo(data);
                }
            }
        }
    }

    @Test
    void pinnedBuffersRoundTripThroughTheDevice() {
        byte[] data = randomBytes(SIZE, 4);
        try (PinnedHostBuffer out = cuda.allocatePinned(SIZE);
             PinnedHostBuffer in = cuda.allocatePinned(SIZE);
             CudaDeviceBuffer device = cuda.allocate(0, SIZE)) {
            ByteBuffer view = out.byteBuffer();
            assertThat(view.isDirect()).isTrue();
            assertThat(view.order()).isEqualTo(ByteOrder.nativeOrder());
            assertThat(view.capacity()).isEqualTo(SIZE);
            view.put(data);

            device.copyFrom(out, 0);
            device.copyTo(0, in);

            assertThat(bytesOf(in.byteBuffer())).isEqualTo(data);
        }
    }

    @Test
    void pinnedBuffersAbove2GiBRoundTrip() {
        assertThat(GpuCheck.largePinnedRoundTrip(cuda)).isNull();
    }

    @Test
    void reportsTheDriverVersion() {
        assertThat(cuda.driverVersion()).matches("\\d+\\.\\d+");
    }

    @Test
    void stagingHelperCopiesBetweenRawAddresses() {
        byte[] data = randomBytes(SIZE, 5);
        try (PinnedHostBuffer staging = cuda.allocatePinned(SIZE);
             CudaDeviceBuffer device = cuda.allocate(0, SIZE)) {
            staging.byteBuffer().put(data);
            CudaStaging.copyHostToDevice(staging.address(), device.address(), SIZE);
            staging.byteBuffer().put(new byte[SIZE]);
            CudaStaging.copyDeviceToHost(device.address(), staging.address(), SIZE);

            assertThat(bytesOf(staging.byteBuffer())).isEqualTo(data);
        }
    }

    @Test
    void devicePointersAreRecognized() {
        try (PinnedHostBuffer pinned = cuda.allocatePinned(64);
             CudaDeviceBuffer device = cuda.allocate(0, 64)) {
            assertThat(CudaStaging.isDevicePointer(device.address())).isTrue();
            assertThat(CudaStaging.isDevicePointer(device.address() + 63)).isTrue();
            assertThat(cuda.deviceOf(device.address())).isZero();
            assertThat(CudaStaging.isDevicePointer(pinned.address())).isFalse();
            assertThat(CudaStaging.isDevicePointer(addressOf(ByteBuffer.allocateDirect(64)))).isFalse();
            assertThat(CudaStaging.isDevicePointer(0)).isFalse();
        }
    }

    @Test
    void deviceToDeviceCopiesOnOneDevice() {
        byte[] data = randomBytes(SIZE, 6);
        try (CudaDeviceBuffer source = cuda.allocate(0, SIZE);
             CudaDeviceBuffer destination = cuda.allocate(0, SIZE)) {
            source.copyFrom(data, 0);
            destination.copyFrom(source, 0, 0, SIZE);
            byte[] back = new byte[SIZE];
            destination.copyTo(0, back);
            assertThat(back).isEqualTo(data);
        }
    }

    @Test
    void deviceToDeviceCopiesAcrossDevices() {
        assumeTrue(cuda.deviceCount() >= 2, "needs two GPUs; this machine has " + cuda.deviceCount());
        byte[] data = randomBytes(SIZE, 7);
        try (CudaDeviceBuffer source = cuda.allocate(0, SIZE);
             CudaDeviceBuffer destination = cuda.allocate(1, SIZE)) {
            source.copyFrom(data, 0);
            cuda.copyDeviceToDevice(source.address(), destination.address(), SIZE);
            byte[] back = new byte[SIZE];
            destination.copyTo(0, back);
            assertThat(back).isEqualTo(data);
        }
    }

    @Test
    void aBufferAllocatedOnOneThreadIsUsableAndFreedOnOthers() throws Exception {
        byte[] data = randomBytes(SIZE, 8);
        CudaDeviceBuffer buffer = CompletableFuture.supplyAsync(() -> cuda.allocate(0, SIZE), otherThreads)
                .get(30, TimeUnit.SECONDS);
        buffer.copyFrom(data, 0);
        byte[] back = CompletableFuture.supplyAsync(() -> {
            byte[] copy = new byte[SIZE];
            buffer.copyTo(0, copy);
            return copy;
        }, otherThreads).get(30, TimeUnit.SECONDS);
        assertThat(back).isEqualTo(data);

        Thread freer = new Thread(buffer::close);
        freer.start();
        freer.join();
        assertThat(buffer.isClosed()).isTrue();
    }

    @Test
    void closingWhileInUseIsRefusedAndTheMemoryStaysUsable() {
        byte[] data = randomBytes(4096, 9);
        CudaDeviceBuffer buffer = cuda.allocate(0, 4096);
        LiveUse use = buffer.acquireUse();

        assertThatThrownBy(buffer::close)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("still registered in a live operation");
        buffer.copyFrom(data, 0);
        byte[] back = new byte[4096];
        buffer.copyTo(0, back);
        assertThat(back).isEqualTo(data);

        use.close();
        buffer.close();
        assertThat(buffer.isClosed()).isTrue();
    }

    @Test
    void closingTwiceIsHarmlessAndUseAfterCloseIsRefused() {
        CudaDeviceBuffer device = cuda.allocate(0, 64);
        PinnedHostBuffer pinned = cuda.allocatePinned(64);
        device.close();
        pinned.close();

        assertThatCode(device::close).doesNotThrowAnyException();
        assertThatCode(pinned::close).doesNotThrowAnyException();
        assertThatThrownBy(() -> device.copyFrom(new byte[8], 0))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("is closed");
        assertThatThrownBy(pinned::byteBuffer)
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("is closed");
    }

    @Test
    void outOfRangeCopiesAreRejectedBeforeReachingTheDriver() {
        try (CudaDeviceBuffer buffer = cuda.allocate(0, 64)) {
            assertThatThrownBy(() -> buffer.copyFrom(new byte[65], 0)).isInstanceOf(IndexOutOfBoundsException.class);
            assertThatThrownBy(() -> buffer.copyTo(60, new byte[8])).isInstanceOf(IndexOutOfBoundsException.class);
            assertThatThrownBy(() -> buffer.copyTo(-1, new byte[8])).isInstanceOf(IndexOutOfBoundsException.class);
        }
    }

    @Test
    void anImpossibleAllocationFailsWithTheDriverError() {
        assertThatThrownBy(() -> cuda.allocate(0, 1L << 52))
                .isInstanceOf(CudaOperationException.class)
                .hasMessageContaining("cuMemAlloc")
                .hasMessageContaining("CUDA_ERROR_OUT_OF_MEMORY");
    }

    @Test
    void aMissingDeviceIsReportedAsUnavailable() {
        int missing = cuda.deviceCount();
        assertThatThrownBy(() -> cuda.allocate(missing, 64))
                .isInstanceOf(CudaUnavailableException.class)
                .hasMessageContaining("no CUDA device " + missing);
    }

    private static byte[] randomBytes(int size, long seed) {
        byte[] bytes = new byte[size];
        new Random(seed).nextBytes(bytes);
        return bytes;
    }

    /** Ordinary (pageable) native memory, for contrast with device and pinned memory. */
    private static long addressOf(ByteBuffer direct) {
        return Pointer.nativeValue(Native.getDirectBufferPointer(direct));
    }

    private static byte[] bytesOf(ByteBuffer buffer) {
        byte[] bytes = new byte[buffer.remaining()];
        buffer.duplicate().get(bytes);
        return bytes;
    }
}
