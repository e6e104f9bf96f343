package io.nixlconnect.benchmarks;

import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.TransportBackend;

/**
 * Connector options both benchmark JVMs share. The NIXL library directory comes from
 * {@code -Dnixl.library.path} or {@code NIXL_LIBRARY_DIR} (what {@code .ci/nixl-setup.sh} prints); without
 * either, the NIXL backend searches the usual places itself.
 */
final class BenchmarkOptions {

    static final String LIBRARY_PATH_PROPERTY = "nixl.library.path";
    /** {@code -Dbench.sameHostCopy=false}: the embedded transport stays on TCP (both JVMs). */
    static final String SAME_HOST_COPY_PROPERTY = "bench.sameHostCopy";

    static boolean sameHostCopy() {
        return Boolean.parseBoolean(System.getProperty(SAME_HOST_COPY_PROPERTY, "true"));
    }

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

    static ConnectorOptions.Builder connector(String workerId, TransportBackend backend) {
        ConnectorOptions.Builder builder = ConnectorOptions.builder().workerId(workerId).backend(backend)
                .sameHostCopy(sameHostCopy());
        if (backend == TransportBackend.NIXL) {
            builder.nixlLibraryPath(nixlLibraryDir());
        }
        return builder;
    }
}
