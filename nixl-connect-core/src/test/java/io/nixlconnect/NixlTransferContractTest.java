package io.nixlconnect;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.nixlconnect.transport.nixl.NixlSettings;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;

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
}
