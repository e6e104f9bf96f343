package io.nixlconnect.transport.nixl;

import io.nixlconnect.transport.TransportException;
import org.junit.jupiter.api.Assumptions;

import java.nio.file.Path;

/** Opens the NIXL transport the way CI provides it ({@code .ci/nixl-setup.sh}), or skips the test. */
final class NixlTestSupport {

    private NixlTestSupport() {
    }

    /** NIXL_LIBRARY_DIR from the setup script, else the locator's own search. */
    static NixlSettings settings() {
        String dir = System.getenv("NIXL_LIBRARY_DIR");
        NixlSettings settings = NixlSettings.defaults();
        return dir == null || dir.isBlank() ? settings : settings.withLibraryDir(Path.of(dir));
    }

    static NixlTransport openOrSkip() {
        try {
            return NixlTransport.open(settings());
        } catch (TransportException e) {
            Assumptions.abort("NIXL cannot be loaded, so the NIXL transfer tests are skipped"
                    + " (run .ci/nixl-setup.sh and export what it prints): " + e.getMessage());
            throw e;
        }
    }
}
