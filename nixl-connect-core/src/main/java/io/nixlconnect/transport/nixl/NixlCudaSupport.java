package io.nixlconnect.transport.nixl;

import com.sun.jna.NativeLibrary;
import io.nixlconnect.cuda.Cuda;
import io.nixlconnect.cuda.CudaAvailability;
import io.nixlconnect.cuda.DeviceContext;
import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryType;
import io.nixlconnect.transport.TransportException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;

/**
 * What NIXL (through UCX) needs to move GPU memory, checked and explained here rather than left to a bare
 * {@code ERROR_BACKEND}.
 *
 * <p>NIXL's wheel ships UCX with its CUDA modules: {@code libuct_cuda} (cuda_copy, cuda_ipc) needs the driver
 * ({@code libcuda.so.1}), and {@code libucm_cuda} (the CUDA memory hooks) also needs the CUDA 12 runtime
 * {@code libcudart.so.12}, which the wheel does not ship. Without the hooks UCX disables its registration
 * caches; without the CUDA transports UCX sees GPU memory as host memory and NIXL refuses to register it
 * ("VRAM memory is detected as host by UCX").
 *
 * <p>CUDA contexts: NIXL ≥ 1.0 manages none. VRAM is registered, and transfers with local VRAM are
 * created, posted and polled, with the primary context of the memory's device pushed on the calling
 * thread for the call ({@link #contextFor}); the caller's own context is restored afterwards.
 */
final class NixlCudaSupport {

    static final String CUDA_RUNTIME = "libcudart.so.12";

    private static final Logger log = LoggerFactory.getLogger(NixlCudaSupport.class);
    private static String runtimeProblem;
    private static boolean probed;
    private static boolean logged;

    private NixlCudaSupport() {
    }

    /** Null when {@value #CUDA_RUNTIME} loads in this process, else why it does not. */
    static synchronized String cudaRuntimeProblem() {
        if (!probed) {
            probed = true;
            try {
                NativeLibrary.getInstance(CUDA_RUNTIME);
            } catch (UnsatisfiedLinkError e) {
                runtimeProblem = missingRuntime(firstLine(e.getMessage()));
            }
        }
        return runtimeProblem;
    }

    static String missingRuntime(String loaderMessage) {
        return CUDA_RUNTIME + " (the CUDA 12 runtime) cannot be loaded (" + loaderMessage + "): UCX's CUDA memory "
                + "hooks (libucm_cuda) need it, so UCX runs without its registration caches for GPU memory; "
                + "install the CUDA 12 runtime (e.g. pip install nvidia-cuda-runtime-cu12, or the CUDA toolkit) and "
                + "add its lib directory to LD_LIBRARY_PATH (docs/nixl.md, \"GPU memory\")";
    }

    /** For health details: the runtime's state in a few words. */
    static String cudaRuntimeStatus() {
        String problem = cudaRuntimeProblem();
        return problem == null ? CUDA_RUNTIME + " loaded" : "missing: " + problem;
    }

    /** Logs, once per process, what NIXL lacks for GPU memory: a warning where there is a GPU, else debug. */
    static synchronized void logOnce() {
        if (logged) {
            return;
        }
        logged = true;
        String problem = cudaRuntimeProblem();
        if (problem == null) {
            log.debug("nixl-connect: NIXL GPU memory support: {} loaded", CUDA_RUNTIME);
        } else if (Cuda.isAvailable()) {
            log.warn("nixl-connect: NIXL GPU memory support is degraded: {}", problem);
        } else {
            log.debug("nixl-connect: no GPU; {}", problem);
        }
    }

    /** The error text for a failed VRAM registration: NIXL's status, then the likely cause. */
    static String vramRegistrationFailure(MemoryRegion region, String status) {
        String runtime = cudaRuntimeProblem();
        String cause;
        if (!Cuda.isAvailable()) {
            cause = "CUDA is unavailable in this process (" + Cuda.availability().reason() + ")";
        } else if (runtime != null) {
            cause = runtime;
        } else {
            cause = "UCX detected the GPU memory as host memory (NIXL logs \"VRAM memory is detected as host by "
                    + "UCX\"): the UCX in use was built without CUDA support, or its CUDA transports (libuct_cuda) "
                    + "could not load; run with UCX_LOG_LEVEL=info to see which UCX modules load";
        }
        return "NIXL: registering GPU memory " + region + " failed: " + status + "; likely cause: " + cause;
    }

    /**
     * With VRAM among {@code regions}, the primary context of its device current on this thread until closed;
     * else null (try-with-resources accepts it).
     */
    static DeviceContext contextFor(List<MemoryRegion> regions) {
        for (MemoryRegion region : regions) {
            if (region.type() == MemoryType.VRAM) {
                CudaAvailability availability = Cuda.availability(region.deviceId());
                if (!availability.available()) {
                    throw new TransportException("NIXL cannot register or move memory of GPU " + region.deviceId()
                            + ": GPU support is unavailable (" + availability.reason() + ")");
                }
                return Cuda.open().enterDevice(region.deviceId());
            }
        }
        return null;
    }

    /** The CUDA device of the first VRAM region, or -1 when all are host memory. */
    static int cudaDeviceOf(List<MemoryRegion> regions) {
        for (MemoryRegion region : regions) {
            if (region.type() == MemoryType.VRAM) {
                return region.deviceId();
            }
        }
        return -1;
    }

    private static String firstLine(String message) {
        String text = String.valueOf(message);
        int end = text.indexOf('\n');
        return (end < 0 ? text : text.substring(0, end)).strip();
    }
}
