package io.nixlconnect.sample;

import io.nixlconnect.Descriptor;

/**
 * Where the sample's tensors live, and how it fills and checks them. {@link HostTensorMemory} uses host
 * memory ({@link Descriptor#allocate(long)}).
 *
 * <p>{@link CudaTensorMemory} keeps them in GPU memory (JCuda), chosen by {@code sample.device}.
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
