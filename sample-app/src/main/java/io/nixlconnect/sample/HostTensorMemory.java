package io.nixlconnect.sample;

import io.nixlconnect.Descriptor;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.LongBuffer;
import java.util.zip.CRC32C;

/** Tensors in host memory, filled with a deterministic pattern and checked with CRC32C (no copies). */
public class HostTensorMemory implements TensorMemory {

    /** Tensors are visited in chunks: a ByteBuffer view holds at most 2 GiB. Multiple of 8. */
    private static final int CHUNK = 64 << 20;

    /** Values computed per bulk copy. */
    private static final int BLOCK = 8192;

    @Override
    public String device() {
        return "cpu";
    }

    @Override
    public Descriptor allocate(long bytes) {
        return Descriptor.allocate(bytes);
    }

    @Override
    public void fill(Descriptor tensor, long seed) {
        long size = tensor.size();
        long[] block = new long[BLOCK];
        long index = 0;
        for (long offset = 0; offset < size; offset += CHUNK) {
            ByteBuffer chunk = tensor.asByteBuffer(offset, (int) Math.min(CHUNK, size - offset))
                    .order(ByteOrder.LITTLE_ENDIAN);
            LongBuffer longs = chunk.asLongBuffer();
            while (longs.hasRemaining()) {
                int count = Math.min(BLOCK, longs.remaining());
                for (int i = 0; i < count; i++) {
                    block[i] = value(seed, index + i);
                }
                longs.put(block, 0, count);
                index += count;
            }
            chunk.position(chunk.position() + longs.position() * Long.BYTES);
            long last = value(seed, index);
            for (int shift = 0; chunk.hasRemaining(); shift += 8) {
                chunk.put((byte) (last >>> shift));
            }
        }
    }

    /** The 8 bytes at {@code index * 8}: a SplitMix64 step, so every seed gives a different, well-mixed pattern. */
    static long value(long seed, long index) {
        long z = seed * 0x9E3779B97F4A7C15L + (index + 1) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    @Override
    public long crc32c(Descriptor tensor) {
        CRC32C crc = new CRC32C();
        long size = tensor.size();
        for (long offset = 0; offset < size; offset += CHUNK) {
            crc.update(tensor.asByteBuffer(offset, (int) Math.min(CHUNK, size - offset)));
        }
        return crc.getValue();
    }
}
