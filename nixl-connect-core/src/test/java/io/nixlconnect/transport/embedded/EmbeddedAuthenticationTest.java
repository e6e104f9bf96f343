package io.nixlconnect.transport.embedded;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.nixlconnect.transport.TransferOp;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * Optional peer authentication (a shared secret, proven both ways before any request is read) and TLS (both
 * sides present a certificate the other trusts), alone and together.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class EmbeddedAuthenticationTest {

    private static final String SECRET = "correct horse battery staple";
    private static final int SIZE = 1 << 20;

    @TempDir
    static Path directory;
    static SSLContext alice;
    static SSLContext bob;
    static SSLContext stranger;

    @BeforeAll
    static void certificates() throws Exception {
        Path aliceKeys = TestTls.keyStore(directory, "alice");
        Path bobKeys = TestTls.keyStore(directory, "bob");
        Path strangerKeys = TestTls.keyStore(directory, "stranger");
        alice = TestTls.context(aliceKeys, aliceKeys, bobKeys);
        bob = TestTls.context(bobKeys, aliceKeys, bobKeys);
        stranger = TestTls.context(strangerKeys, aliceKeys, bobKeys, strangerKeys);
    }

    private static byte[] transfer(EmbeddedSettings server, EmbeddedSettings client, byte[] content) throws Exception {
        try (ServedMemory served = new ServedMemory(server, "served", TransferOp.READ, content);
             EmbeddedTransport reader = EmbeddedTransport.open(client)) {
            byte[] read = EmbeddedHostileLoadTest.read(reader, served, served.credential, content.length);
            served.window.notified().get(10, TimeUnit.SECONDS);
            return read;
        }
    }

    private static String failure(EmbeddedSettings server, EmbeddedSettings client) {
        Throwable thrown = org.assertj.core.api.Assertions.catchThrowable(
                () -> transfer(server, client, new byte[64]));
        assertThat(thrown).isInstanceOf(ExecutionException.class);
        return thrown.getCause().getMessage();
    }

    @Test
    void peersSharingTheSecretTransfer() throws Exception {
        byte[] content = EmbeddedCredentialTest.random(SIZE);
        EmbeddedSettings settings = ServedMemory.loopback().withSharedSecret(SECRET);
        assertThat(transfer(settings, settings, content)).isEqualTo(content);
    }

    @Test
    void aPeerWithAnotherSecretIsRefused() {
        assertThat(failure(ServedMemory.loopback().withSharedSecret(SECRET),
                ServedMemory.loopback().withSharedSecret("another secret, just as long")))
                .contains("could not prove the shared secret");
    }

    @Test
    void aPeerWithoutTheSecretIsToldWhy() {
        assertThat(failure(ServedMemory.loopback().withSharedSecret(SECRET), ServedMemory.loopback()))
                .contains("requires authentication");
        assertThat(failure(ServedMemory.loopback(), ServedMemory.loopback().withSharedSecret(SECRET)))
                .contains("no embedded shared secret configured");
    }

    @Test
    void nothingFromAnUnauthenticatedPeerIsRead() throws Exception {
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback().withSharedSecret(SECRET), "served",
                TransferOp.READ, EmbeddedCredentialTest.random(64))) {
            // Even a request with the right key for a live window: refused without being read.
            try (RawPeer peer = new RawPeer(served.port())) {
                RawPeer.Answer answer = peer.send(RawPeer.request(Wire.READ, "served", served.credential,
                        served.address, 64)).answer();
                assertThat(answer.kind()).isEqualTo("ERROR");
                assertThat(answer.message()).contains("requires authentication");
                assertThat(peer.closedWithin(5000)).isTrue();
            }
            // A hello with a forged proof.
            try (RawPeer peer = new RawPeer(served.port())) {
                peer.send(java.nio.ByteBuffer.allocate(4 + PeerAuthentication.NONCE).putInt(PeerAuthentication.HELLO_MAGIC)
                        .array());
                assertThat(peer.answer()).isEqualTo(RawPeer.Answer.OK);
                peer.readBytes(PeerAuthentication.NONCE + PeerAuthentication.PROOF);
                peer.send(new byte[PeerAuthentication.PROOF]);
                assertThat(peer.answer().message()).contains("authentication failed");
                assertThat(peer.closedWithin(5000)).isTrue();
            }
            assertThat(served.window.notified()).isNotDone();
        }
    }

    @Test
    void theRefusingSideWarnsOfAPeerWithAnotherSecretAtMostOnceAMinute() throws Exception {
        ListAppender<ILoggingEvent> logs = new ListAppender<>();
        Logger logger = (Logger) LoggerFactory.getLogger(PeerAuthentication.class);
        logs.start();
        logger.addAppender(logs);
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback().withSharedSecret(SECRET), "served",
                TransferOp.READ, EmbeddedCredentialTest.random(64));
             EmbeddedTransport reader = EmbeddedTransport.open(ServedMemory.loopback()
                     .withSharedSecret("another secret, just as long"))) {
            org.assertj.core.api.Assertions.assertThatThrownBy(
                    () -> EmbeddedHostileLoadTest.read(reader, served, served.credential, 64));
            // the server learns of it when the peer hangs up on its proof, on the server's own thread
            List<ILoggingEvent> warnings = awaitWarnings(logs, 1);
            assertThat(warnings).singleElement().satisfies(warning -> assertThat(warning.getFormattedMessage())
                    .startsWith("Embedded transport: refused a connection from /127.0.0.1: it rejected this "
                            + "connector's proof of the shared secret and closed: its secret differs")
                    .contains("nixl.connect.embedded.shared-secret")
                    .doesNotContain(SECRET));

            // A second refusal within the minute is counted, not logged: the server has answered it, so it has
            // gone through the rate limit already.
            try (RawPeer peer = new RawPeer(served.port())) {
                assertThat(peer.send(RawPeer.request(Wire.READ, "served", served.credential, served.address, 64))
                        .answer().message()).contains("requires authentication");
            }
            assertThat(warnings(logs)).hasSize(1);
        } finally {
            logger.detachAppender(logs);
        }

        // A server without a secret refuses a peer that has one, and says so too (its own limit).
        logs = new ListAppender<>();
        logs.start();
        logger.addAppender(logs);
        try {
            failure(ServedMemory.loopback(), ServedMemory.loopback().withSharedSecret(SECRET));
            assertThat(awaitWarnings(logs, 1)).singleElement().satisfies(warning -> assertThat(
                    warning.getFormattedMessage()).contains("it offers a proof of a shared secret, and this connector has none set"));
        } finally {
            logger.detachAppender(logs);
        }
    }

    private static List<ILoggingEvent> warnings(ListAppender<ILoggingEvent> logs) {
        synchronized (logs) { // AppenderBase appends under the appender's own lock
            return logs.list.stream().filter(event -> event.getLevel() == Level.WARN).toList();
        }
    }

    /** Waits (at most 10 s) for {@code count} warnings, logged on a server thread. */
    private static List<ILoggingEvent> awaitWarnings(ListAppender<ILoggingEvent> logs, int count)
            throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (warnings(logs).size() < count && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        return warnings(logs);
    }

    @Test
    void tlsPeersTransfer() throws Exception {
        byte[] content = EmbeddedCredentialTest.random(SIZE);
        assertThat(transfer(ServedMemory.loopback().withSslContext(alice), ServedMemory.loopback().withSslContext(bob),
                content)).isEqualTo(content);
    }

    @Test
    void tlsAndTheSecretTogether() throws Exception {
        byte[] content = EmbeddedCredentialTest.random(SIZE);
        assertThat(transfer(ServedMemory.loopback().withSslContext(alice).withSharedSecret(SECRET),
                ServedMemory.loopback().withSslContext(bob).withSharedSecret(SECRET), content)).isEqualTo(content);
    }

    @Test
    void tlsRefusesAnUntrustedPeerAndAPlainOne() {
        // The stranger trusts alice, but alice does not trust the stranger's certificate.
        assertThat(failure(ServedMemory.loopback().withSslContext(alice), ServedMemory.loopback().withSslContext(stranger)))
                .isNotBlank();
        assertThat(failure(ServedMemory.loopback().withSslContext(alice), ServedMemory.loopback())).isNotBlank();
        assertThat(failure(ServedMemory.loopback(), ServedMemory.loopback().withSslContext(bob))).isNotBlank();
    }

    @Test
    void settingsRefuseAShortSecretAndNeverPrintIt() {
        assertThatThrownBy(() -> ServedMemory.loopback().withSharedSecret("short"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least 16");
        assertThat(ServedMemory.loopback().withSharedSecret(SECRET).toString()).doesNotContain(SECRET).contains("(set)");
    }
}
