package io.nixlconnect.transport.embedded;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.io.BufferedReader;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLServerSocket;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 23 item 3: a peer without the shared secret that an honest client connects to relays the client's handshake
 * to the real server, then speaks to the server on its own. Before, the relay ended authenticated (served IDENTIFY and
 * 1,000 NOTIFYs). Now each proof is bound to the listening endpoint the client connects to and, over TLS, to both
 * certificates: the relayed proofs hold for neither end, and the relay is served nothing. A recorded proof replayed on
 * a new connection is refused, as before.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class EmbeddedHandshakeRelayTest {

    private static final String SECRET = "a shared secret of the cluster, long enough";
    private static final int HELLO = 4 + PeerAuthentication.NONCE;
    private static final int SERVER_ANSWER = 1 + PeerAuthentication.NONCE + PeerAuthentication.PROOF;

    @TempDir
    Path work;

    /** The real server in its own JVM; the relay and the honest client here. */
    @Test
    void aRelayedHandshakeAuthenticatesNeitherTheRelayNorTheClient() throws Exception {
        Process server = SameHostConfusedDeputyTest.startAsAnotherUserWhereRoot(work, SameHostVictim.class, SECRET);
        try (BufferedReader lines = new BufferedReader(new InputStreamReader(server.getInputStream(),
                StandardCharsets.UTF_8))) {
            int serverPort = Integer.parseInt(SameHostConfusedDeputyTest.awaitReady(lines)[1]);
            try (ServerSocket relayListener = new ServerSocket(0, 5, InetAddress.getLoopbackAddress());
                 EmbeddedTransport honest = EmbeddedTransport.open(EmbeddedSettings.defaults().withSharedSecret(SECRET))) {
                CompletableFuture<Relayed> relay = CompletableFuture.supplyAsync(() -> relayOnce(relayListener,
                        () -> new Socket(InetAddress.getLoopbackAddress(), serverPort)));
                // The honest client was handed metadata naming the relay's endpoint.
                Throwable refused = catchThrowable(() -> EmbeddedTransfer.connect(honest,
                        new EmbeddedMetadata("peer", "127.0.0.1", relayListener.getLocalPort()), link -> { }).close());
                Relayed relayed = relay.get(30, TimeUnit.SECONDS);
                assertThat(relayed.servedRequests).as("requests the server answered on the relay's own session "
                        + "(first answer: %s)", relayed.firstAnswer).isZero();
                assertThat(refused).as("the honest client refuses the relayed proof").isNotNull()
                        .hasMessageContaining("could not prove the shared secret");
            }
        } finally {
            server.getOutputStream().close();
            if (!server.waitFor(10, TimeUnit.SECONDS)) {
                server.destroyForcibly();
            }
        }
    }

    /**
     * TLS with certificates from one trust store, the relay holding one of its own, placed on the client's path to the
     * server's very endpoint (as DNS or routing would put it): the endpoint is the same, the certificates differ.
     */
    @Test
    void aRelayOnThePathWithATrustedCertificateOfItsOwnIsNotAuthenticatedOverTls() throws Exception {
        Path aliceKeys = TestTls.keyStore(work, "alice");
        Path bobKeys = TestTls.keyStore(work, "bob");
        Path malloryKeys = TestTls.keyStore(work, "mallory");
        SSLContext alice = TestTls.context(aliceKeys, aliceKeys, bobKeys, malloryKeys);
        SSLContext bob = TestTls.context(bobKeys, aliceKeys, bobKeys, malloryKeys);
        SSLContext mallory = TestTls.context(malloryKeys, aliceKeys, bobKeys, malloryKeys);
        EmbeddedSettings serverSettings = ServedMemory.loopback().withSslContext(alice).withSharedSecret(SECRET);
        try (ServedMemory served = new ServedMemory(serverSettings, "served", io.nixlconnect.transport.TransferOp.READ,
                new byte[64]);
             SSLServerSocket relayListener = (SSLServerSocket) mallory.getServerSocketFactory().createServerSocket(0, 5,
                     InetAddress.getLoopbackAddress())) {
            relayListener.setNeedClientAuth(true);
            CompletableFuture<Relayed> relay = CompletableFuture.supplyAsync(() -> relayOnce(relayListener, () -> {
                SSLSocket socket = (SSLSocket) mallory.getSocketFactory().createSocket(InetAddress.getLoopbackAddress(),
                        served.port());
                socket.startHandshake();
                return socket;
            }));
            PeerAuthentication client = new PeerAuthentication(bob, SECRET);
            SocketChannel toRelay = SocketChannel.open(new InetSocketAddress(InetAddress.getLoopbackAddress(),
                    relayListener.getLocalPort()));
            // The client means the server's endpoint; its connection ends at the relay.
            Throwable refused = catchThrowable(() -> client.client(toRelay, "127.0.0.1", served.port()).close());
            toRelay.close();
            Relayed relayed = relay.get(30, TimeUnit.SECONDS);
            assertThat(relayed.servedRequests).as("requests served to the relay (first answer: %s)", relayed.firstAnswer)
                    .isZero();
            assertThat(refused).isNotNull().hasMessageContaining("could not prove the shared secret");
            assertThat(served.window.notified()).isNotDone();
        }
    }

    /**
     * A proxy on the client's path to the server's own endpoint forwards a whole handshake (without TLS it can: see
     * docs/security.md) and records it; the recorded hello and proof replayed on a new connection meet a new server
     * nonce and are refused.
     */
    @Test
    void aRecordedHandshakeReplayedOnANewConnectionIsRefused() throws Exception {
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback().withSharedSecret(SECRET), "served",
                io.nixlconnect.transport.TransferOp.READ, new byte[64]);
             ServerSocket proxy = new ServerSocket(0, 5, InetAddress.getLoopbackAddress())) {
            CompletableFuture<Relayed> recording = CompletableFuture.supplyAsync(() -> relayOnce(proxy,
                    () -> new Socket(InetAddress.getLoopbackAddress(), served.port())));
            SocketChannel toProxy = SocketChannel.open(new InetSocketAddress(InetAddress.getLoopbackAddress(),
                    proxy.getLocalPort()));
            new PeerAuthentication(null, SECRET).client(toProxy, "127.0.0.1", served.port()).close();
            Relayed recorded = recording.get(30, TimeUnit.SECONDS);
            assertThat(recorded.clientProof).hasSize(PeerAuthentication.PROOF);
            assertThat(replay(served.port(), recorded)).contains("authentication failed");
            assertThat(served.window.notified()).isNotDone();
        }
    }

    private record Relayed(int servedRequests, String firstAnswer, byte[] hello, byte[] clientProof) {
    }

    interface Connecting {
        Socket open() throws IOException;
    }

    /**
     * Accepts one honest client, relays its handshake to the server byte for byte, then sends the server requests of
     * its own on the session (an IDENTIFY, then 1,000 NOTIFYs) and counts those it got an answer to other than a
     * refusal of authentication.
     */
    private static Relayed relayOnce(ServerSocket listener, Connecting toServer) {
        try (Socket client = listener.accept(); Socket server = toServer.open()) {
            client.setSoTimeout(10_000);
            server.setSoTimeout(10_000);
            InputStream fromClient = client.getInputStream();
            OutputStream toClient = client.getOutputStream();
            DataInputStream fromServer = new DataInputStream(server.getInputStream());
            OutputStream toServerOut = server.getOutputStream();
            byte[] hello = fromClient.readNBytes(HELLO);
            toServerOut.write(hello);
            toServerOut.flush();
            toClient.write(fromServer.readNBytes(SERVER_ANSWER));
            toClient.flush();
            byte[] clientProof = fromClient.readNBytes(PeerAuthentication.PROOF); // short if the client gave up
            if (clientProof.length == PeerAuthentication.PROOF) {
                toServerOut.write(clientProof);
                toServerOut.flush();
                int status = fromServer.read();
                toClient.write(status);
                toClient.flush();
            }
            // From here the relay speaks for itself.
            int served = 0;
            String first = null;
            try {
                for (int i = 0; i < 1001; i++) {
                    byte type = i == 0 ? Wire.IDENTIFY : Wire.NOTIFY;
                    toServerOut.write(RawPeer.request(type, "bystander", ServedMemory.newCredential()));
                    toServerOut.flush();
                    int status = fromServer.read();
                    if (status < 0) {
                        first = first == null ? "closed" : first;
                        break;
                    }
                    String answer = status == Wire.OK ? "OK" : readMessage(fromServer);
                    first = first == null ? answer : first;
                    if (answer.contains("authentication") || answer.contains("requires")) {
                        break;
                    }
                    served++;
                    if (status == Wire.OK && type == Wire.IDENTIFY) {
                        fromServer.readNBytes(SameHostIdentity.ENCODED_BYTES);
                    }
                }
            } catch (IOException dropped) {
                first = first == null ? dropped.toString() : first;
            }
            return new Relayed(served, first, hello, clientProof);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static String readMessage(DataInputStream in) throws IOException {
        byte[] text = new byte[in.readUnsignedShort()];
        in.readFully(text);
        return new String(text, StandardCharsets.UTF_8);
    }

    /** Replays the recorded hello and a client proof (or, without one, a made-up one) on a fresh connection. */
    private static String replay(int port, Relayed recorded) throws IOException {
        try (RawPeer peer = new RawPeer(port)) {
            peer.send(recorded.hello);
            if (peer.answer() != RawPeer.Answer.OK) {
                return "refused at hello";
            }
            peer.readBytes(PeerAuthentication.NONCE + PeerAuthentication.PROOF);
            byte[] proof = recorded.clientProof.length == PeerAuthentication.PROOF ? recorded.clientProof
                    : new byte[PeerAuthentication.PROOF];
            return peer.send(proof).answer().message();
        }
    }
}
