package io.nixlconnect.transport.embedded;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/** Self-signed PKCS#12 key stores made with the JDK's keytool, and SSL contexts over them. */
final class TestTls {

    static final char[] PASSWORD = "changeit".toCharArray();

    private TestTls() {
    }

    /** A key store holding one self-signed key pair for {@code CN=name}, valid for loopback. */
    static Path keyStore(Path directory, String name) throws IOException, InterruptedException {
        Path file = directory.resolve(name + ".p12");
        Path keytool = Path.of(System.getProperty("java.home"), "bin", "keytool");
        Process process = new ProcessBuilder(keytool.toString(), "-genkeypair", "-alias", name, "-keyalg", "EC",
                "-groupname", "secp256r1", "-dname", "CN=" + name, "-ext", "SAN=ip:127.0.0.1,dns:localhost",
                "-validity", "2", "-storetype", "PKCS12", "-keystore", file.toString(), "-storepass",
                new String(PASSWORD), "-keypass", new String(PASSWORD)).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes());
        if (!process.waitFor(60, TimeUnit.SECONDS) || process.exitValue() != 0) {
            throw new IOException("keytool failed: " + output);
        }
        return file;
    }

    /** Presents {@code own}'s key and trusts exactly the certificates in {@code trusted}. */
    static SSLContext context(Path own, Path... trusted) throws Exception {
        KeyStore keys = load(own);
        KeyManagerFactory keyManagers = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        keyManagers.init(keys, PASSWORD);
        KeyStore trust = KeyStore.getInstance("PKCS12");
        trust.load(null, null);
        for (Path path : trusted) {
            KeyStore store = load(path);
            for (String alias : java.util.Collections.list(store.aliases())) {
                trust.setCertificateEntry(alias, store.getCertificate(alias));
            }
        }
        TrustManagerFactory trustManagers = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        trustManagers.init(trust);
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(keyManagers.getKeyManagers(), trustManagers.getTrustManagers(), null);
        return context;
    }

    private static KeyStore load(Path path) throws Exception {
        KeyStore store = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(path)) {
            store.load(in, PASSWORD);
        }
        return store;
    }
}
