package io.nixlconnect.cuda;

import java.util.List;

import jcuda.driver.CUdevice;

/**
 * CUDA buffers over ordinary memory, backed by a test double of the driver layer that frees nothing but
 * records what would have been freed: for the buffer lifecycle (uses, refusals, frees) on machines
 * without a GPU. Their memory must never reach a real CUDA call.
 */
public final class CudaTestDoubles {

    private CudaTestDoubles() {
    }

    /** A "device" buffer on {@code cuda:deviceId} at {@code address}; its free is recorded in {@code freed}. */
    public static CudaDeviceBuffer deviceBuffer(int deviceId, long address, long size, List<Long> freed) {
        return new CudaDeviceBuffer(new RecordingDriver(freed), deviceId, address, size);
    }

    /** A "pinned" buffer over host memory at {@code address}; its free is recorded in {@code freed}. */
    public static PinnedHostBuffer pinnedBuffer(long address, long size, List<Long> freed) {
        return new PinnedHostBuffer(new RecordingDriver(freed), address, size);
    }

    /** A driver with no devices whose frees are recorded; any other call reaches nothing real. */
    static final class RecordingDriver extends CudaDriver {
        private final List<Long> freed;

        RecordingDriver(List<Long> freed) {
            super(List.of(), new CUdevice[0], "test double", new String[0], new Context[0]);
            this.freed = freed;
        }

        @Override
        void freeDevice(int deviceId, long address) {
            freed.add(address);
        }

        @Override
        void freePinned(long address, long bytes) {
            freed.add(address);
        }

        /** Pretends to push a context, recording "push N". */
        @Override
        boolean enter(int deviceId) {
            freed.add(-1L - deviceId);
            return true;
        }

        /** Pretends to pop a context, recording it as {@link Long#MIN_VALUE}. */
        @Override
        void leave() {
            freed.add(Long.MIN_VALUE);
        }

        @Override
        void inContext(int deviceId, Runnable work) {
            throw new UnsupportedOperationException("a test double of the CUDA driver moves no memory");
        }
    }
}
