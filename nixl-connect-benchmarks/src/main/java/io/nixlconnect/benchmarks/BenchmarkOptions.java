package io.nixlconnect.benchmarks;

import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.transport.TransportSettings;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import io.nixlconnect.transport.nixl.NixlSettings;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.util.List;
import java.util.Locale;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

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

    /** {@code -Dbench.tcpStreams=N}: connections a large embedded TCP transfer is striped over (both JVMs). */
    static final String TCP_STREAMS_PROPERTY = "bench.tcpStreams";

    static int tcpStreams() {
        return Integer.getInteger(TCP_STREAMS_PROPERTY, EmbeddedSettings.DEFAULT_TCP_STREAMS);
    }
    /** PKCS#12 key store (key and trust both) for the embedded transport's TLS; unset: plain TCP. */
    static final String TLS_KEY_STORE_PROPERTY = "bench.embedded.tls.keystore";
    static final String TLS_PASSWORD_PROPERTY = "bench.embedded.tls.password";
    /** Shared secret for the embedded transport; unset: none. */
    static final String SECRET_PROPERTY = "bench.embedded.secret";
    /**
     * {@code -Dbench.nixl.progressThreadDelayMicros=N}: NIXL's own progress thread with that pause ({@code -1}: off);
     * unset: the library's default (every JVM of the harness).
     */
    static final String NIXL_PROGRESS_THREAD_PROPERTY = "bench.nixl.progressThreadDelayMicros";
    /** Properties the peer JVM inherits from the harness. */
    static final List<String> FORWARDED = List.of(LIBRARY_PATH_PROPERTY, TLS_KEY_STORE_PROPERTY, TLS_PASSWORD_PROPERTY,
            SECRET_PROPERTY, NIXL_PROGRESS_THREAD_PROPERTY);

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
            NixlSettings settings = NixlSettings.defaults().withLibraryDir(dir == null ? null : Path.of(dir));
            Long progressThreadDelay = Long.getLong(NIXL_PROGRESS_THREAD_PROPERTY);
            return progressThreadDelay == null ? settings
                    : settings.withNixlProgressThreadDelayMicros(progressThreadDelay);
        }
        if (name.equals(EmbeddedSettings.NAME)) {
            EmbeddedSettings settings = EmbeddedSettings.defaults().withSameHostCopy(sameHostCopy())
                    .withTcpStreams(tcpStreams()).withSharedSecret(blankToNull(System.getProperty(SECRET_PROPERTY)));
            String keyStore = System.getProperty(TLS_KEY_STORE_PROPERTY);
            if (keyStore != null && !keyStore.isBlank()) {
                settings = settings.withSslContext(sslContext(Path.of(keyStore),
                        System.getProperty(TLS_PASSWORD_PROPERTY, "changeit").toCharArray()));
            }
            return settings;
        }
        throw new IllegalArgumentException("backend must be embedded or nixl, was " + backend);
    }

    private static String blankToNull(String value) {
        return value == null || value.isBlank() ? null : value;
    }

    static ConnectorOptions.Builder connector(String workerId, String backend) {
        return ConnectorOptions.builder().workerId(workerId).transports(transport(backend));
    }

    /** One key store serves as both key material and trust anchors (the benchmark's two JVMs share it). */
    private static SSLContext sslContext(Path keyStore, char[] password) {
        try (InputStream in = Files.newInputStream(keyStore)) {
            KeyStore store = KeyStore.getInstance("PKCS12");
            store.load(in, password);
            KeyManagerFactory keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            keys.init(store, password);
            TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            trust.init(store);
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(keys.getKeyManagers(), trust.getTrustManagers(), null);
            return context;
        } catch (IOException | GeneralSecurityException e) {
            throw new IllegalStateException("Cannot load the benchmark key store " + keyStore + ": " + e, e);
        }
    }
}
