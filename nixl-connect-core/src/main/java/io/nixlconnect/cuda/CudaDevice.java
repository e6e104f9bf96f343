package io.nixlconnect.cuda;

/**
 * One CUDA device as the driver reports it.
 *
 * @param id                    the CUDA ordinal, as in {@code cuda:N}
 * @param name                  the product name, e.g. {@code NVIDIA H200}
 * @param totalMemory           device memory in bytes
 * @param computeCapabilityMajor e.g. 9 for Hopper
 * @param computeCapabilityMinor e.g. 0 for Hopper
 */
public record CudaDevice(int id, String name, long totalMemory, int computeCapabilityMajor,
                         int computeCapabilityMinor) {

    /** The compute capability as {@code major.minor}, e.g. {@code 9.0}. */
    public String computeCapability() {
        return computeCapabilityMajor + "." + computeCapabilityMinor;
    }

    @Override
    public String toString() {
        return "cuda:" + id + " " + name + " (" + (totalMemory >> 20) + " MiB, compute capability "
                + computeCapability() + ")";
    }
}
