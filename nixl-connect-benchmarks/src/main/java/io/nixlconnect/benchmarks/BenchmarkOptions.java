package io.nixlconnect.benchmarks;

import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.transport.TransportSettings;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import io.nixlconnect.transport.nixl.NixlSettings;
import java.nio.file.Path;
import java.util.Locale;

/**
 * Connector options both benchmark JVMs share. The NIXL library directory comes from
 * {@code -Dnixl.library.path} or {@code NIXL_LIBRARY_DIR} (what {@code .ci/nixl-setup.sh} prints); without
 * either, the NIXL backend searches the usual places itself.
 */
final class BenchmarkOptions {

    static final String LIBRARY_PATH_PROPERTY = "nixl.library.path";

    private BenchmarkOptions() {
    }

    /** The NIXL library directory to use, or null to let the backend search. */
    static String nixlLibraryDir() {
        String configured = System.getProperty(LIBRARY_PATH_PROPERTY);
        if (configured == null || configured.isBlank()) {
            configured = System.getenv("NIXL_LIBRARY_DIR");
        }
        return configured == null || configured.isBlank() ? null : configured;
    }

    /** The transport named {@code backend} ({@code embedded} or {@code nixl}, any case), NIXL from {@link #nixlLibraryDir()}. */
    static TransportSettings transport(String backend) {
        String name = backend.toLowerCase(Locale.ROOT);
        if (name.equals(NixlSettings.NAME)) {
            String dir = nixlLibraryDir();
            return NixlSettings.defaults().withLibraryDir(dir == null ? null : Path.of(dir));
        }
        if (name.equals(EmbeddedSettings.NAME)) {
            return EmbeddedSettings.defaults();
        }
        throw new IllegalArgumentException("backend must be embedded or nixl, was " + backend);
    }

    static ConnectorOptions.Builder connector(String workerId, String backend) {
        return ConnectorOptions.builder().workerId(workerId).transports(transport(backend));
    }
}
