package io.nixlconnect.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.net.URL;
import java.net.URLClassLoader;
import java.util.List;

import jcuda.driver.CUdevice;

import org.junit.jupiter.api.Test;

/**
 * Runs on every machine. Without a GPU (as on CI) it checks that the absence is reported in words
 * and as {@link CudaUnavailableException}, never as a crash; with a GPU those checks are skipped.
 */
class CudaAvailabilityTest {

    /** The causes a probe may name; every unavailable reason must start with one of them. */
    private static final String[] KNOWN_CAUSES = {
            "JCuda is not on the classpath",
            "no NVIDIA driver",
            "the JCuda native library",
            "JCuda cannot be loaded",
            "no CUDA device",
            "no usable CUDA device",
            "the NVIDIA driver",
    };

    @Test
    void loadingThePublicClassesTouchesNoCuda() {
        assertThatCode(() -> {
            for (Class<?> type : new Class<?>[] {Cuda.class, CudaMemory.class, CudaStaging.class,
                    CudaDeviceBuffer.class, PinnedHostBuffer.class, CudaAvailability.class}) {
                Class.forName(type.getName(), true, type.getClassLoader());
            }
        }).doesNotThrowAnyException();
    }

    @Test
    void availabilityIsAnsweredWithoutThrowing() {
        CudaAvailability availability = Cuda.availability();

        assertThat(availability.reason()).isNotBlank();
        assertThat(Cuda.isAvailable()).isEqualTo(availability.available());
        assertThat(Cuda.availability()).as("probed once, then cached").isSameAs(availability);
    }

    @Test
    void withoutAGpuTheReasonNamesTheCause() {
        assumeFalse(Cuda.isAvailable(), "this machine has a usable GPU");

        CudaAvailability availability = Cuda.availability();

        assertThat(availability.deviceCount()).isZero();
        assertThat(availability.reason()).startsWith(knownCauseOf(availability.reason()));
    }

    @Test
    void withoutAGpuOpeningThrowsCudaUnavailableExceptionWithTheReason() {
        assumeFalse(Cuda.isAvailable(), "this machine has a usable GPU");
        String reason = Cuda.availability().reason();

        assertThatThrownBy(Cuda::open)
                .isInstanceOf(CudaUnavailableException.class)
                .hasMessage("CUDA is unavailable: " + reason)
                .satisfies(e -> assertThat(((CudaUnavailableException) e).reason()).isEqualTo(reason))
                .satisfies(e -> {
                    if (reason.startsWith("no NVIDIA driver") || reason.startsWith("JCuda is not on")) {
                        assertThat(e.getCause()).as("an expected absence carries no stack trace").isNull();
                    }
                });
    }

    @Test
    void withoutAGpuStagingCopiesThrowAndPointersAreNotDevicePointers() {
        assumeFalse(Cuda.isAvailable(), "this machine has a usable GPU");

        assertThatThrownBy(() -> CudaStaging.copyDeviceToHost(0x1000, 0x2000, 16))
                .isInstanceOf(CudaUnavailableException.class)
                .hasMessageContaining(Cuda.availability().reason());
        assertThatThrownBy(() -> CudaStaging.copyHostToDevice(0x2000, 0x1000, 16))
                .isInstanceOf(CudaUnavailableException.class);
        assertThat(CudaStaging.isDevicePointer(0x1000)).isFalse();
    }

    @Test
    void withoutAGpuEveryDeviceIdIsUnavailableForTheSameReason() {
        assumeFalse(Cuda.isAvailable(), "this machine has a usable GPU");

        assertThat(Cuda.availability(0)).isEqualTo(Cuda.availability());
    }

    @Test
    void aDeviceIdBeyondTheDeviceCountIsUnavailableWithItsOwnReason() {
        GpuTests.requireGpu();
        int count = Cuda.availability().deviceCount();

        CudaAvailability missing = Cuda.availability(count);

        assertThat(missing.available()).isFalse();
        assertThat(missing.reason()).startsWith("no CUDA device " + count + ": this machine has " + count);
        assertThatThrownBy(() -> Cuda.open().allocate(count, 16))
                .isInstanceOf(CudaUnavailableException.class)
                .hasMessageContaining("no CUDA device " + count);
    }

    @Test
    void withoutJCudaOnTheClasspathEverythingLoadsAndTheReasonSaysSo() throws Exception {
        URL classes = Cuda.class.getProtectionDomain().getCodeSource().getLocation();
        // Sees this package's classes but nothing of JCuda (or anything else outside the JDK).
        try (URLClassLoader withoutJCuda = new URLClassLoader(new URL[] {classes},
                ClassLoader.getPlatformClassLoader())) {
            for (Class<?> type : new Class<?>[] {Cuda.class, CudaMemory.class, CudaStaging.class,
                    CudaDeviceBuffer.class, PinnedHostBuffer.class, CudaBuffer.class, LiveUse.class}) {
                assertThatCode(() -> Class.forName(type.getName(), true, withoutJCuda))
                        .as("loading %s without JCuda", type.getSimpleName()).doesNotThrowAnyException();
            }
            Class<?> isolatedCuda = withoutJCuda.loadClass(Cuda.class.getName());
            Object availability = isolatedCuda.getMethod("availability").invoke(null);

            assertThat(availability.getClass().getMethod("available").invoke(availability)).isEqualTo(false);
            assertThat((String) availability.getClass().getMethod("reason").invoke(availability))
                    .isEqualTo("JCuda is not on the classpath (add " + Cuda.JCUDA_COORDINATES + ")");
            assertThat(withoutJCuda.loadClass(CudaStaging.class.getName())
                    .getMethod("isDevicePointer", long.class).invoke(null, 0x1000L)).isEqualTo(false);
        }
    }

    @Test
    void aMissingDriverLibraryIsReportedAsNoDriver() {
        UnsatisfiedLinkError error = new UnsatisfiedLinkError("Error while loading native library "
                + "\"JCudaDriver-12.6.0-linux-x86_64\"\nStack trace from the attempt to load the library as a "
                + "resource:\njava.lang.UnsatisfiedLinkError: /tmp/libJCudaDriver-12.6.0-linux-x86_64.so: "
                + "libcuda.so.1: cannot open shared object file: No such file or directory\n\tat ...");

        assertThat(Cuda.describeLinkFailure(error))
                .isEqualTo("no NVIDIA driver: libcuda.so.1 (the CUDA driver library) cannot be loaded");
    }

    @Test
    void missingNativesAreReportedWithTheArtifactToAdd() {
        UnsatisfiedLinkError error = new UnsatisfiedLinkError("Error while loading native library "
                + "\"JCudaDriver-12.6.0-linux-x86_64\"\nmore detail");

        assertThat(Cuda.describeLinkFailure(error))
                .startsWith("the JCuda native library for this platform cannot be loaded")
                .contains("org.jcuda:jcuda-natives:12.6.0:linux-x86_64")
                .doesNotContain("more detail");
    }

    @Test
    void aDriverOlderThanCuda12IsReportedAsTooOldBeforeJCudaCallsAFunctionItLacks() {
        assertThat(CudaDriver.tooOldDriver("11.4")).isEqualTo("the NVIDIA driver is too old: it supports CUDA 11.4, "
                + "JCuda 12.6 needs a driver for CUDA 12.0 or newer; update the driver");
        assertThat(CudaDriver.MINIMUM_DRIVER_VERSION).isEqualTo(12000);
    }

    @Test
    void anUndefinedSymbolIsNotMistakenForAnOldDriver() {
        // JCuda binds lazily, so a missing driver function never shows as a link error at load time.
        UnsatisfiedLinkError error = new UnsatisfiedLinkError("/tmp/libX.so: undefined symbol: foo");

        assertThat(Cuda.describeLinkFailure(error)).startsWith("JCuda cannot be loaded: UnsatisfiedLinkError");
    }

    @Test
    void devicesThisProcessMayNotUseAreReportedWithTheReason() {
        String prohibited = "cuda:1 is in prohibited compute mode (no process may use it; see nvidia-smi -c)";
        CudaDriver twoDevices = new CudaDriver(List.of(), new CUdevice[2], "12.4", new String[] {null, prohibited},
                new CudaDriver.Context[2]);

        CudaAvailability availability = Cuda.describe(twoDevices);

        assertThat(availability.available()).isTrue();
        assertThat(availability.deviceCount()).isEqualTo(2);
        assertThat(availability.reason()).isEqualTo("2 CUDA device(s); unusable: " + prohibited);
        assertThat(twoDevices.usableDeviceCount()).isEqualTo(1);
    }

    @Test
    void noUsableDeviceMeansUnavailableNamingEachDevice() {
        String taken = "cuda:0 is in exclusive-process compute mode and cannot be used by this process, probably "
                + "another one holds it (cuDevicePrimaryCtxRetain: CUDA_ERROR_DEVICE_UNAVAILABLE)";
        CudaDriver oneTaken = new CudaDriver(List.of(), new CUdevice[1], "12.4", new String[] {taken},
                new CudaDriver.Context[1]);

        CudaAvailability availability = Cuda.describe(oneTaken);

        assertThat(availability.available()).isFalse();
        assertThat(availability.reason()).isEqualTo("no usable CUDA device: " + taken);
        assertThat(knownCauseOf(availability.reason())).isNotNull();
    }

    private static String knownCauseOf(String reason) {
        for (String cause : KNOWN_CAUSES) {
            if (reason.startsWith(cause)) {
                return cause;
            }
        }
        throw new AssertionError("reason names no known cause: " + reason);
    }
}
