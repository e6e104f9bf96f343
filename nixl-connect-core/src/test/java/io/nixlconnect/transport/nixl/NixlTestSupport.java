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

    private static String unavailable;

    /** Opens NIXL; null when it cannot be loaded ({@link #skipUnlessLoaded} then skips with the reason). */
    static synchronized NixlTransport openOrNull() {
        try {
            unavailable = null;
            return NixlTransport.open(settings());
        } catch (TransportException e) {
            unavailable = e.getMessage();
            return null;
        }
    }

    /** Skips the calling test, stating why, when {@link #openOrNull} failed. */
    static synchronized void skipUnlessLoaded(NixlTransport transport) {
        Assumptions.assumeTrue(transport != null, () -> "NIXL cannot be loaded, so this NIXL test is skipped"
                + " (run .ci/nixl-setup.sh and export what it prints): " + unavailable);
    }
}
