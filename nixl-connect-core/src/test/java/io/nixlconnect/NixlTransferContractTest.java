package io.nixlconnect;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import static org.assertj.core.api.Assertions.assertThat;

import io.nixlconnect.transport.nixl.NixlSettings;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The transfer contract over NIXL. Runs when {@code NIXL_LIBRARY_DIR} points at a NIXL install (CI sets it up
 * with {@code .ci/nixl-setup.sh}); skipped, with the reason, otherwise.
 */
@Tag(TestTags.NIXL)
class NixlTransferContractTest extends TransferContractTest {

    private static final String LIBRARY_DIR = System.getenv("NIXL_LIBRARY_DIR");

    @BeforeAll
    static void requireNixl() {
        assumeTrue(LIBRARY_DIR != null && !LIBRARY_DIR.isBlank(),
                "NIXL_LIBRARY_DIR is not set: run `eval \"$(.ci/nixl-setup.sh)\"` to test against a real NIXL");
    }

    @Override
    ConnectorOptions.Builder options() {
        return ConnectorOptions.builder().transports(NixlSettings.defaults().withLibraryDir(Path.of(LIBRARY_DIR)));
    }

    /** With several backends NIXL chooses per transfer; the operation says which (here UCX, the second listed). */
    @Test
    void theBackendNixlChoseAmongSeveralIsReported() {
        List<String> backends = List.of("POSIX", "UCX"); // POSIX moves files, not memory between agents
        NixlSettings settings = NixlSettings.defaults().withLibraryDir(Path.of(LIBRARY_DIR)).withBackends(backends);
        try (Connector a = new Connector(ConnectorOptions.builder().workerId("two-backends-a").transports(settings).build());
             Connector b = new Connector(ConnectorOptions.builder().workerId("two-backends-b").transports(settings).build());
             Descriptor source = new Descriptor(TestData.random(4096));
             Descriptor target = Descriptor.allocate(4096)) {
            ReadableOperation readable = a.createReadable(source);
            ReadOperation read = b.beginRead(readable.metadata(), target);
            read.waitForCompletion(Duration.ofSeconds(30));
            assertThat(read.attributes()).containsEntry("backend", "UCX");
            assertThat(b.transportStatus().details()).containsEntry("transfersByBackend", Map.of("UCX", 1L));
            readable.waitForCompletion(Duration.ofSeconds(30));
        }
    }
}
