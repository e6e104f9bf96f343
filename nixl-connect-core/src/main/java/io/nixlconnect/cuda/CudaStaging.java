package io.nixlconnect.cuda;

/**
 * Raw-address copies for transports that move GPU memory through host memory (e.g. over sockets):
 * a device range into a (preferably pinned) host buffer and back. Usable from any thread; the device
 * is found from the device pointer and its primary context made current on the calling thread.
 * Each copy has completed when it returns.
 */
public final class CudaStaging {

    private CudaStaging() {
    }

    /**
     * Copies {@code bytes} from {@code devicePointer} to {@code hostAddress}.
     *
     * @throws CudaUnavailableException if CUDA is not usable here
     * @throws IllegalArgumentException if {@code devicePointer} is not CUDA device memory
     */
    public static void copyDeviceToHost(long devicePointer, long hostAddress, long bytes) {
        Cuda.open().copyDeviceToHost(devicePointer, hostAddress, bytes);
    }

    /**
     * Copies {@code bytes} from {@code hostAddress} to {@code devicePointer}.
     *
     * @throws CudaUnavailableException if CUDA is not usable here
     * @throws IllegalArgumentException if {@code devicePointer} is not CUDA device memory
     */
    public static void copyHostToDevice(long hostAddress, long devicePointer, long bytes) {
        Cuda.open().copyHostToDevice(hostAddress, devicePointer, bytes);
    }

    /**
     * Whether {@code address} is CUDA device memory of this process; false, not an exception, when CUDA
     * is not usable here.
     */
    public static boolean isDevicePointer(long address) {
        return Cuda.isAvailable() && Cuda.open().isDevicePointer(address);
    }
}
