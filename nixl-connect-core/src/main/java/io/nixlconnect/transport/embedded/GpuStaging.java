package io.nixlconnect.transport.embedded;

import io.nixlconnect.cuda.Cuda;
import io.nixlconnect.cuda.CudaAvailability;
import io.nixlconnect.cuda.CudaMemory;
import io.nixlconnect.cuda.DeviceContext;
import io.nixlconnect.cuda.CudaStaging;
import io.nixlconnect.cuda.PinnedHostBuffer;
import io.nixlconnect.internal.NativeMemory;
import io.nixlconnect.transport.TransportException;
import java.io.IOException;
import java.util.concurrent.ConcurrentLinkedDeque;

/**
 * Moves GPU memory over a socket through pinned host buffers: device → pinned → socket when sending,
 * socket → pinned → device when receiving. Pinned buffers are pooled per transport (pinning is slow).
 */
final class GpuStaging implements AutoCloseable {

    static final int CHUNK = 8 << 20;

    private final ConcurrentLinkedDeque<PinnedHostBuffer> idle = new ConcurrentLinkedDeque<>();
    private volatile boolean closed;

    /** Refuses GPU memory, with the reason, when CUDA cannot be used here. */
    static void requireCuda(int deviceId) {
        CudaAvailability availability = Cuda.availability(deviceId);
        if (!availability.available()) {
            throw new TransportException("The embedded transport cannot move memory of GPU " + deviceId
                    + ": GPU support is unavailable (" + availability.reason() + ")");
        }
    }

    void send(Link link, long devicePointer, long length) throws IOException {
        PinnedHostBuffer staging = borrow(devicePointer);
        try {
            for (long done = 0; done < length; ) {
                int chunk = (int) Math.min(CHUNK, length - done);
                CudaStaging.copyDeviceToHost(devicePointer + done, staging.address(), chunk);
                link.writeFully(NativeMemory.view(staging.address(), chunk));
                done += chunk;
            }
        } finally {
            giveBack(staging);
        }
    }

    void receive(Link link, long devicePointer, long length) throws IOException {
        PinnedHostBuffer staging = borrow(devicePointer);
        try {
            for (long done = 0; done < length; ) {
                int chunk = (int) Math.min(CHUNK, length - done);
                link.readFully(NativeMemory.view(staging.address(), chunk));
                CudaStaging.copyHostToDevice(staging.address(), devicePointer + done, chunk);
                done += chunk;
            }
        } finally {
            giveBack(staging);
        }
    }

    private PinnedHostBuffer borrow(long devicePointer) {
        PinnedHostBuffer buffer = idle.poll();
        if (buffer != null) {
            return buffer;
        }
        // Pinning needs some CUDA context current: the memory's own device's, so no other device gets one.
        CudaMemory cuda = Cuda.open();
        int deviceId = cuda.deviceOf(devicePointer);
        try (DeviceContext context = deviceId >= 0 ? cuda.enterDevice(deviceId) : null) {
            return cuda.allocatePinned(CHUNK);
        }
    }

    private void giveBack(PinnedHostBuffer buffer) {
        idle.push(buffer);
        if (closed) {
            drain();
        }
    }

    private void drain() {
        PinnedHostBuffer buffer;
        while ((buffer = idle.poll()) != null) {
            buffer.close();
        }
    }

    @Override
    public void close() {
        closed = true;
        drain();
    }
}
