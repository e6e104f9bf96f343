package io.nixlconnect.cuda;

import static org.junit.jupiter.api.Assertions.fail;

import org.junit.jupiter.api.Assumptions;

/**
 * The guard of every test that needs a GPU. Without a usable GPU such a test is skipped, with the reason;
 * on a machine that is meant to have one ({@code -Dnixl.test.gpu.required=true} or
 * {@code NIXL_TEST_GPU_REQUIRED=1}, as the device script sets) it fails instead, naming the reason, so
 * that a broken driver or a JCuda that does not load cannot pass as a green run with skips.
 */
public final class GpuTests {

    public static final String REQUIRED_PROPERTY = "nixl.test.gpu.required";
    public static final String REQUIRED_ENVIRONMENT = "NIXL_TEST_GPU_REQUIRED";

    private GpuTests() {
    }

    /** Whether this run expects a usable GPU: the system property, else the environment variable. */
    public static boolean gpuRequired() {
        return gpuRequired(System.getProperty(REQUIRED_PROPERTY), System.getenv(REQUIRED_ENVIRONMENT));
    }

    static boolean gpuRequired(String property, String environment) {
        if (property != null && !property.isBlank()) {
            return Boolean.parseBoolean(property.strip());
        }
        return environment != null && (environment.strip().equals("1") || environment.strip().equalsIgnoreCase("true"));
    }

    /** The CUDA memory service; skips the test without a usable GPU, or fails it when a GPU is required. */
    public static CudaMemory requireGpu() {
        requireGpu(Cuda.availability(), gpuRequired());
        return Cuda.open();
    }

    /** Skips (or, when required, fails) unless {@code availability} says CUDA is usable. */
    static void requireGpu(CudaAvailability availability, boolean required) {
        if (availability.available()) {
            return;
        }
        if (required) {
            fail(gpuExpectedMessage(availability.reason()));
        }
        Assumptions.abort("no GPU: " + availability.reason());
    }

    /** What a run that expects a GPU reports when there is none. */
    public static String gpuExpectedMessage(String reason) {
        return "a usable GPU is required (" + REQUIRED_PROPERTY + "=true or " + REQUIRED_ENVIRONMENT
                + "=1) but CUDA is unavailable: " + reason;
    }
}
