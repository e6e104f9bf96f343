package io.nixlconnect;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The transfer contract over NIXL. Runs when {@code NIXL_LIBRARY_DIR} points at a NIXL install (CI sets it up
 * with {@code .ci/nixl-setup.sh}); skipped, with the reason, otherwise.
 */
class NixlTransferContractTest extends TransferContractTest {

    private static final String LIBRARY_DIR = System.getenv("NIXL_LIBRARY_DIR");

    @BeforeAll
    static void requireNixl() {
        assumeTrue(LIBRARY_DIR != null && !LIBRARY_DIR.isBlank(),
                "NIXL_LIBRARY_DIR is not set: run `eval \"$(.ci/nixl-setup.sh)\"` to test against a real NIXL");
    }

    @Override
    ConnectorOptions.Builder options() {
        return ConnectorOptions.builder().backend(TransportBackend.NIXL).nixlLibraryPath(LIBRARY_DIR);
    }

    /** With several backends NIXL chooses per transfer; the operation says which (here UCX, the second listed). */
    @Test
    void theBackendNixlChoseAmongSeveralIsReported() {
        List<String> backends = List.of("POSIX", "UCX"); // POSIX moves files, not memory between agents
        try (Connector a = new Connector(options().workerId("two-backends-a").nixlBackends(backends).build());
             Connector b = new Connector(options().workerId("two-backends-b").nixlBackends(backends).build());
             Descriptor source = new Descriptor(TestData.random(4096));
             Descriptor target = Descriptor.allocate(4096)) {
            ReadableOperation readable = a.createReadable(source);
            ReadOperation read = b.beginRead(readable.metadata(), target);
            read.waitForCompletion(Duration.ofSeconds(30));
            assertThat(read.attributes()).containsEntry("backend", "UCX");
            assertThat(b.transportDetails()).containsEntry("transfersByBackend", java.util.Map.of("UCX", 1L));
            readable.waitForCompletion(Duration.ofSeconds(30));
        }
    }
}
