package io.nixlconnect.transport.nixl;

import static org.assertj.core.api.Assertions.assertThat;

import io.nixlconnect.cuda.Cuda;
import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryType;
import java.util.List;
import org.junit.jupiter.api.Test;

/** What NIXL needs for GPU memory, reported in words: the CUDA runtime UCX's memory hooks need, the failure's likely cause. */
class NixlCudaSupportTest {

    @Test
    void theCudaRuntimeIsReportedAsLoadedOrMissingWithWhatToDo() {
        String status = NixlCudaSupport.cudaRuntimeStatus();

        if (NixlCudaSupport.cudaRuntimeProblem() == null) {
            assertThat(status).isEqualTo("libcudart.so.12 loaded");
        } else {
            assertThat(status).startsWith("missing: libcudart.so.12 (the CUDA 12 runtime) cannot be loaded")
                    .contains("libucm_cuda").contains("LD_LIBRARY_PATH").contains("docs/nixl.md");
        }
    }

    @Test
    void aFailedVramRegistrationNamesTheLikelyCause() {
        MemoryRegion region = new MemoryRegion(0x7f0000000000L, 4096, MemoryType.VRAM, 0);

        String message = NixlCudaSupport.vramRegistrationFailure(region, "ERROR_BACKEND");

        assertThat(message).startsWith("NIXL: registering GPU memory " + region + " failed: ERROR_BACKEND; likely cause: ");
        if (!Cuda.isAvailable()) {
            assertThat(message).contains("CUDA is unavailable in this process").contains(Cuda.availability().reason());
        } else if (NixlCudaSupport.cudaRuntimeProblem() != null) {
            assertThat(message).contains("libcudart.so.12");
        } else {
            assertThat(message).contains("VRAM memory is detected as host by UCX").contains("UCX_LOG_LEVEL=info");
        }
    }

    @Test
    void hostMemoryNeedsNoCudaContext() {
        MemoryRegion host = new MemoryRegion(0x1000, 64, MemoryType.DRAM, 0);

        assertThat(NixlCudaSupport.contextFor(List.of(host))).isNull();
        assertThat(NixlCudaSupport.cudaDeviceOf(List.of(host))).isEqualTo(-1);
        assertThat(NixlCudaSupport.cudaDeviceOf(List.of(host, new MemoryRegion(0x2000, 64, MemoryType.VRAM, 2)))).isEqualTo(2);
    }

    @Test
    void theMissingRuntimeMessageCarriesTheLoaderMessage() {
        assertThat(NixlCudaSupport.missingRuntime("libcudart.so.12: cannot open shared object file"))
                .contains("(libcudart.so.12: cannot open shared object file)");
    }
}
