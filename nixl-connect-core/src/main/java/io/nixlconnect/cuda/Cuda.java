package io.nixlconnect.cuda;

/**
 * Entry point to CUDA. Nothing CUDA-related is loaded until one of these methods is called, and
 * then only once: the first call probes for JCuda, the NVIDIA driver and devices, and the outcome
 * is kept for the life of the process. A missing GPU is reported, never thrown from class loading.
 *
 * <pre>{@code
 * if (Cuda.isAvailable()) {
 *     try (CudaDeviceBuffer buffer = Cuda.open().allocate(0, 1 << 20)) { ... }
 * } else {
 *     log.info("no GPU: {}", Cuda.availability().reason());
 * }
 * }</pre>
 */
public final class Cuda {

    static final String JCUDA_COORDINATES =
            "org.jcuda:jcuda:12.6.0 and org.jcuda:jcuda-natives:12.6.0:linux-x86_64";

    private static final String NO_DRIVER = "no NVIDIA driver";

    private static CudaAvailability availability;
    private static CudaMemory memory;
    /** Why the probe failed, when that is worth a stack trace; the cause of what {@link #open()} throws. */
    private static Throwable failure;

    private Cuda() {
    }

    /** Whether CUDA is usable, and if not, the reason in words. */
    public static synchronized CudaAvailability availability() {
        if (availability == null) {
            probe();
        }
        return availability;
    }

    /**
     * Whether device {@code deviceId} is usable, and if not, why (no CUDA at all, no such device, or a
     * device this process may not use, e.g. in prohibited or taken exclusive-process compute mode).
     */
    public static CudaAvailability availability(int deviceId) {
        CudaAvailability overall = availability();
        if (overall.available()) {
            if (deviceId < 0 || deviceId >= overall.deviceCount()) {
                return CudaAvailability.unavailable(noSuchDevice(deviceId, overall.deviceCount()));
            }
            String unusable = memory.unusableReason(deviceId);
            if (unusable != null) {
                return CudaAvailability.unavailable(unusable);
            }
        }
        return overall;
    }

    /**
     * Whether at least one CUDA device is usable: the driver works and some device's compute mode lets this
     * process use it (devices in exclusive-process mode are tried during discovery).
     */
    public static boolean isAvailable() {
        return availability().available();
    }

    /**
     * The CUDA memory service.
     *
     * @throws CudaUnavailableException naming the cause when CUDA cannot be used here
     */
    public static synchronized CudaMemory open() {
        CudaAvailability current = availability();
        if (!current.available()) {
            throw new CudaUnavailableException(current.reason(), failure);
        }
        return memory;
    }

    private static void probe() {
        try {
            Class.forName("jcuda.driver.JCudaDriver", false, Cuda.class.getClassLoader());
        } catch (ClassNotFoundException | LinkageError e) {
            fail("JCuda is not on the classpath (add " + JCUDA_COORDINATES + ")", null);
            return;
        }
        try {
            CudaDriver driver = CudaDriver.initialize();
            availability = describe(driver);
            memory = availability.available() ? new CudaMemory(driver) : null;
        } catch (CudaUnavailableException e) {
            fail(e.reason(), e);
        } catch (CudaOperationException e) {
            fail("the NVIDIA driver failed while listing devices (" + e.getMessage() + ")", e);
        } catch (LinkageError e) {
            String reason = describeLinkFailure(e);
            // A missing driver needs no trace; anything stranger keeps JCuda's error as the cause.
            fail(reason, reason.startsWith(NO_DRIVER) ? null : e);
        }
    }

    /** Available when some device is usable; the reason lists the devices that are not. */
    static CudaAvailability describe(CudaDriver driver) {
        StringBuilder unusable = new StringBuilder();
        for (int id = 0; id < driver.deviceCount(); id++) {
            String reason = driver.unusableReason(id);
            if (reason != null) {
                unusable.append(unusable.isEmpty() ? "" : "; ").append(reason);
            }
        }
        if (driver.usableDeviceCount() == 0) {
            return CudaAvailability.unavailable("no usable CUDA device: " + unusable);
        }
        String summary = driver.deviceCount() + " CUDA device(s)";
        return new CudaAvailability(true, unusable.isEmpty() ? summary : summary + "; unusable: " + unusable,
                driver.deviceCount());
    }

    private static void fail(String reason, Throwable cause) {
        availability = CudaAvailability.unavailable(reason);
        failure = cause;
    }

    /**
     * JCuda reports a missing driver and missing natives as one long UnsatisfiedLinkError with nested
     * stack traces in its message; boil it down to the cause. (A driver lacking a function is no link
     * error: JCuda binds driver functions lazily, so the driver version is checked instead, see
     * {@link CudaDriver#MINIMUM_DRIVER_VERSION}.)
     */
    static String describeLinkFailure(LinkageError error) {
        String message = String.valueOf(error.getMessage());
        if (message.contains("libcuda.so")) {
            return NO_DRIVER + ": libcuda.so.1 (the CUDA driver library) cannot be loaded";
        }
        if (message.contains("JCudaDriver-")) {
            return "the JCuda native library for this platform cannot be loaded (is "
                    + "org.jcuda:jcuda-natives:12.6.0:linux-x86_64 on the classpath?): " + firstLine(message);
        }
        return "JCuda cannot be loaded: " + error.getClass().getSimpleName() + ": " + firstLine(message);
    }

    private static String firstLine(String message) {
        int end = message.indexOf('\n');
        return (end < 0 ? message : message.substring(0, end)).strip();
    }

    static String noSuchDevice(int deviceId, int deviceCount) {
        return "no CUDA device " + deviceId + ": this machine has " + deviceCount + " (cuda:0"
                + (deviceCount > 1 ? " to cuda:" + (deviceCount - 1) : "") + ")";
    }
}
