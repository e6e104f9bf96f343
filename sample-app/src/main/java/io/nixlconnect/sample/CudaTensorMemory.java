package io.nixlconnect.sample;

import io.nixlconnect.Descriptor;
import io.nixlconnect.cuda.CudaMemory;
import io.nixlconnect.cuda.PinnedHostBuffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.LongBuffer;
import java.util.zip.CRC32C;

/**
 * Tensors in GPU memory (through JCuda): filled and checksummed by staging chunks through a pinned host
 * buffer, with the same pattern and CRC32C as {@link HostTensorMemory}, so CPU and GPU workers agree.
 */
public class CudaTensorMemory implements TensorMemory {

    private static final int CHUNK = 64 << 20; // multiple of 8

    private final CudaMemory cuda;
    private final int deviceId;

    public CudaTensorMemory(CudaMemory cuda, int deviceId) {
        this.cuda = cuda;
        this.deviceId = deviceId;
    }

    @Override
    public String device() {
        return "cuda:" + deviceId;
    }

    @Override
    public Descriptor allocate(long bytes) {
        return Descriptor.owning(cuda.allocate(deviceId, bytes));
    }

    @Override
    public void fill(Descriptor tensor, long seed) {
        try (PinnedHostBuffer staging = cuda.allocatePinned(CHUNK)) {
            long index = 0;
            for (long offset = 0; offset < tensor.size(); offset += CHUNK) {
                int length = (int) Math.min(CHUNK, tensor.size() - offset);
                ByteBuffer chunk = staging.byteBuffer().order(ByteOrder.LITTLE_ENDIAN).limit(length);
                LongBuffer longs = chunk.asLongBuffer();
                while (longs.hasRemaining()) {
                    longs.put(HostTensorMemory.value(seed, index++));
                }
                chunk.position(longs.position() * Long.BYTES);
                long last = HostTensorMemory.value(seed, index);
                for (int shift = 0; chunk.hasRemaining(); shift += 8) {
                    chunk.put((byte) (last >>> shift));
                }
                cuda.copyHostToDevice(staging.address(), tensor.ptr() + offset, length);
            }
        }
    }

    @Override
    public long crc32c(Descriptor tensor) {
        CRC32C crc = new CRC32C();
        try (PinnedHostBuffer staging = cuda.allocatePinned(CHUNK)) {
            for (long offset = 0; offset < tensor.size(); offset += CHUNK) {
                int length = (int) Math.min(CHUNK, tensor.size() - offset);
                cuda.copyDeviceToHost(tensor.ptr() + offset, staging.address(), length);
                crc.update(staging.byteBuffer().limit(length));
            }
        }
        return crc.getValue();
    }

}
