package io.nixlconnect.cuda;

/**
 * A device's primary context made current on one thread for a while, from
 * {@link CudaMemory#enterDevice(int)}. Closing it, on the same thread, pops the context again, so the
 * thread's own context (or CUDA runtime device) is current as before; when the context was current
 * already, nothing was pushed and closing does nothing. Closing twice is harmless.
 */
public final class DeviceContext implements AutoCloseable {

    private final CudaDriver driver;
    private final int deviceId;
    private final Thread owner = Thread.currentThread();
    private boolean pushed;

    private DeviceContext(CudaDriver driver, int deviceId, boolean pushed) {
        this.driver = driver;
        this.deviceId = deviceId;
        this.pushed = pushed;
    }

    static DeviceContext enter(CudaDriver driver, int deviceId) {
        return new DeviceContext(driver, deviceId, driver.enter(deviceId));
    }

    /** The device whose primary context this is. */
    public int deviceId() {
        return deviceId;
    }

    /**
     * Restores the thread's previous context.
     *
     * @throws IllegalStateException on another thread than the one that entered (contexts are per thread)
     */
    @Override
    public void close() {
        if (Thread.currentThread() != owner) {
            throw new IllegalStateException("a CUDA context of cuda:" + deviceId + " entered on " + owner.getName()
                    + " must be left on that thread, not on " + Thread.currentThread().getName());
        }
        if (pushed) {
            pushed = false;
            driver.leave();
        }
    }
}
