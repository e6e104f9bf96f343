package io.nixlconnect.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import io.nixlconnect.TestTags;
import org.junit.jupiter.api.Tag;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.JCudaDriver;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The library leaves the calling thread's CUDA context stack as it found it: a thread with a context of its
 * own still has it current after a library call, and a thread with none has none. Needs a GPU (skipped, or
 * failed when one is required, without).
 */
@Tag(TestTags.GPU)
class CudaContextStackTest {

    private CudaMemory cuda;

    @BeforeEach
    void requireGpu() {
        cuda = GpuTests.requireGpu();
    }

    @Test
    void aThreadsOwnContextSurvivesLibraryCalls() throws Exception {
        String problem = CompletableFuture.supplyAsync(() -> {
            CUdevice device = new CUdevice();
            JCudaDriver.cuDeviceGet(device, 0);
            CUcontext own = new CUcontext();
            check(JCudaDriver.cuCtxCreate(own, 0, device), "cuCtxCreate");
            try {
                byte[] data = {1, 2, 3, 4, 5, 6, 7, 8};
                try (CudaDeviceBuffer buffer = cuda.allocate(0, 4096);
                     PinnedHostBuffer pinned = cuda.allocatePinned(4096)) {
                    buffer.copyFrom(data, 0);
                    buffer.copyTo(0, pinned);
                    cuda.deviceOf(buffer.address());
                    try (DeviceContext entered = cuda.enterDevice(0)) {
                        buffer.copyTo(0, new byte[8]);
                    }
                }
                CUcontext current = new CUcontext();
                check(JCudaDriver.cuCtxGetCurrent(current), "cuCtxGetCurrent");
                return current.equals(own) ? null : "current context is " + current + ", not the thread's own " + own;
            } finally {
                JCudaDriver.cuCtxDestroy(own);
            }
        }).get(60, TimeUnit.SECONDS);

        assertThat(problem).isNull();
    }

    @Test
    void aThreadWithoutAContextHasNoneAfterLibraryCalls() throws Exception {
        String problem = CompletableFuture.supplyAsync(() -> {
            try (CudaDeviceBuffer buffer = cuda.allocate(0, 4096);
                 PinnedHostBuffer pinned = cuda.allocatePinned(4096)) {
                buffer.copyFrom(new byte[4096], 0);
                buffer.copyTo(0, pinned);
            }
            CUcontext current = new CUcontext();
            check(JCudaDriver.cuCtxGetCurrent(current), "cuCtxGetCurrent");
            return current.equals(new CUcontext()) ? null : "a context was left current: " + current;
        }).get(60, TimeUnit.SECONDS);

        assertThat(problem).isNull();
    }

    private static void check(int result, String call) {
        if (result != 0) {
            throw new IllegalStateException(call + " failed: " + jcuda.driver.CUresult.stringFor(result));
        }
    }
}
