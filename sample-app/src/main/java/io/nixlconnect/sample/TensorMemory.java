package io.nixlconnect.sample;

import io.nixlconnect.Descriptor;

/**
 * Where the sample's tensors live, and how it fills and checks them. {@link HostTensorMemory} uses host
 * memory ({@link Descriptor#allocate(long)}).
 *
 * <p>This is the seam for GPU tensors: an implementation for {@code sample.device=cuda:N} would allocate
 * device memory (e.g. with JCuda's {@code cudaMalloc}), describe it with
 * {@code new Descriptor(ptr, size, "cuda:N", owner)}, and fill and checksum it by staging through host
 * memory. Declare it as a bean and it replaces the host one. Not implemented yet.
 */
public interface TensorMemory {

    /** The device tensors are allocated on, as a descriptor names it ({@code cpu}, {@code cuda:0}). */
    String device();

    /** A new tensor of {@code bytes} bytes, owned by the caller (close it). */
    Descriptor allocate(long bytes);

    /** Fills {@code tensor} with bytes that depend only on {@code seed} and the position. */
    void fill(Descriptor tensor, long seed);

    /** CRC32C of the tensor's bytes. */
    long crc32c(Descriptor tensor);
}
