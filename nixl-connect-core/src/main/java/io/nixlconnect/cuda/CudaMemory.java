package io.nixlconnect.cuda;

import java.util.List;

/**
 * The CUDA memory service of this process: devices, allocation, and copies between raw addresses.
 * Obtain it from {@link Cuda#open()}; one instance per process, safe to use from any thread.
 *
 * <p>Raw-address copies take the source first, then the destination. Host addresses may point at
 * pinned memory (fastest) or any other native memory; device addresses are CUDA device pointers of
 * this process.
 */
public final class CudaMemory {

    private final CudaDriver driver;

    CudaMemory(CudaDriver driver) {
        this.driver = driver;
    }

    /** The CUDA version the installed driver supports, e.g. {@code 12.4}. */
    public String driverVersion() {
        return driver.driverVersion();
    }

    /** How many CUDA devices the driver reports (at least 1), usable by this process or not. */
    public int deviceCount() {
        return driver.deviceCount();
    }

    /** All devices, by ordinal. */
    public List<CudaDevice> devices() {
        return driver.devices();
    }

    /**
     * The device with this ordinal.
     *
     * @throws CudaUnavailableException if there is no such device
     */
    public CudaDevice device(int deviceId) {
        checkDevice(deviceId);
        return driver.devices().get(deviceId);
    }

    /**
     * Allocates {@code bytes} of device memory on {@code cuda:deviceId}. Not zeroed.
     *
     * @throws CudaUnavailableException if there is no such device
     * @throws CudaOperationException   if the driver refuses, e.g. {@code CUDA_ERROR_OUT_OF_MEMORY}
     */
    public CudaDeviceBuffer allocate(int deviceId, long bytes) {
        checkDevice(deviceId);
        checkAllocationSize(bytes);
        return new CudaDeviceBuffer(driver, deviceId, driver.allocateDevice(deviceId, bytes), bytes);
    }

    /**
     * Allocates {@code bytes} of page-locked host memory. Not zeroed.
     *
     * @throws CudaOperationException if the driver refuses
     */
    public PinnedHostBuffer allocatePinned(long bytes) {
        checkAllocationSize(bytes);
        return new PinnedHostBuffer(driver, driver.allocatePinned(bytes), bytes);
    }

    /**
     * Copies {@code bytes} from device memory to host memory; returns once the data is in host memory.
     * The device is found from the pointer.
     *
     * @throws IllegalArgumentException if {@code devicePointer} is not CUDA device memory
     */
    public void copyDeviceToHost(long devicePointer, long hostAddress, long bytes) {
        if (prepareCopy(bytes, hostAddress)) {
            driver.copyDeviceToHost(owningDevice(devicePointer), devicePointer, hostAddress, bytes);
        }
    }

    /**
     * Copies {@code bytes} from host memory to device memory; returns once the data is on the device.
     * The device is found from the pointer.
     *
     * @throws IllegalArgumentException if {@code devicePointer} is not CUDA device memory
     */
    public void copyHostToDevice(long hostAddress, long devicePointer, long bytes) {
        if (prepareCopy(bytes, hostAddress)) {
            driver.copyHostToDevice(owningDevice(devicePointer), hostAddress, devicePointer, bytes);
        }
    }

    /** Copies {@code bytes} between device pointers, on one device or across two; returns once done. */
    public void copyDeviceToDevice(long sourcePointer, long destinationPointer, long bytes) {
        if (prepareCopy(bytes, sourcePointer)) {
            owningDevice(sourcePointer);
            driver.copyDeviceToDevice(owningDevice(destinationPointer), sourcePointer, destinationPointer, bytes);
        }
    }

    /** Whether {@code address} is CUDA device memory of this process. */
    public boolean isDevicePointer(long address) {
        return driver.deviceOf(address) >= 0;
    }

    /** The ordinal of the device owning {@code address}, or -1 when it is not CUDA device memory. */
    public int deviceOf(long address) {
        return driver.deviceOf(address);
    }

    private int owningDevice(long devicePointer) {
        int deviceId = driver.deviceOf(devicePointer);
        if (deviceId < 0) {
            throw new IllegalArgumentException(
                    "0x" + Long.toHexString(devicePointer) + " is not CUDA device memory of this process");
        }
        return deviceId;
    }

    /** Validates a copy; false when there is nothing to copy. */
    private static boolean prepareCopy(long bytes, long address) {
        Ranges.checkByteCount(bytes);
        if (bytes == 0) {
            return false;
        }
        Ranges.checkAddress("source or destination", address);
        return true;
    }

    private void checkDevice(int deviceId) {
        if (deviceId < 0 || deviceId >= driver.deviceCount()) {
            throw new CudaUnavailableException(Cuda.noSuchDevice(deviceId, driver.deviceCount()));
        }
        String unusable = driver.unusableReason(deviceId);
        if (unusable != null) {
            throw new CudaUnavailableException(unusable);
        }
    }

    /** Why this process cannot use device {@code deviceId}, or null when it can (or there is no such device). */
    String unusableReason(int deviceId) {
        return deviceId >= 0 && deviceId < driver.deviceCount() ? driver.unusableReason(deviceId) : null;
    }

    /**
     * Makes the primary context of device {@code deviceId} current on the calling thread until the returned
     * scope is closed, restoring the thread's own context then: for native libraries (NIXL/UCX) that need a
     * context current when they register or move this device's memory. Close it on the same thread.
     */
    public DeviceContext enterDevice(int deviceId) {
        checkDevice(deviceId);
        return DeviceContext.enter(driver, deviceId);
    }

    private static void checkAllocationSize(long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("allocation size must be > 0 bytes, was " + bytes);
        }
    }
}
