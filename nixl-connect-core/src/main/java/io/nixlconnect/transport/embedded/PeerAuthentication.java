package io.nixlconnect.transport.embedded;

import io.nixlconnect.transport.TransportException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.security.cert.Certificate;
import java.util.concurrent.TimeUnit;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSession;
import javax.net.ssl.SSLSocket;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a connection goes through before its first request: TLS when an {@link SSLContext} is set (both sides
 * present their certificate and check the other's), then, when a shared secret is set, a mutual
 * challenge-response proof of the secret:
 *
 * <pre>
 * client → HELLO_MAGIC:int clientNonce:32
 * server → OK serverNonce:32 HMAC-SHA256(secret, "server" clientNonce serverNonce binding)   (or ERROR message)
 * client → HMAC-SHA256(secret, "client" serverNonce clientNonce binding)
 * server → OK                                                                      (or ERROR message, then close)
 *
 * binding := endpointLen:short endpoint channelLen:short channel
 * </pre>
 *
 * The server reads nothing else from a peer that has not proven the secret. The secret never travels; the
 * nonces make each proof single-use. The binding makes a proof good for one connection between these two ends only:
 * {@code endpoint} is the listening endpoint the client connects to, {@code host:port} as the server publishes it in
 * its metadata (the client takes it from there; the server knows its own), and {@code channel} is, over TLS,
 * SHA-256 of the server's certificate then of the client's (RFC 5929's tls-server-end-point, both ways; Java 17 has
 * no TLS exporter), empty without TLS. A peer without the secret that an honest client connects to and that relays
 * the client's hello to the real server is at another endpoint (and, over TLS, shows another certificate): the
 * server's proof does not hold for the client, and the client's would not hold for the server, so the relay ends
 * with nothing. The older handshake (magic "NXCA", proofs bound to the nonces alone) is refused.
 * A peer the server refuses for the secret (none, another one, one where this server has none, or a proof bound to
 * another endpoint) is logged at WARN, at most once a minute per server, with the count of those not logged.
 */
final class PeerAuthentication {

    static final int HELLO_MAGIC = 0x4E584342; // "NXCB": proofs bound to the endpoint and the channel
    /** The older hello ("NXCA"), whose proofs a relay could pass on: recognised only to say why it is refused. */
    static final int UNBOUND_HELLO_MAGIC = 0x4E584341;
    static final int NONCE = 32;
    static final int PROOF = 32;
    static final byte[] SERVER_ROLE = "server".getBytes(StandardCharsets.US_ASCII);
    static final byte[] CLIENT_ROLE = "client".getBytes(StandardCharsets.US_ASCII);
    private static final Logger log = LoggerFactory.getLogger(PeerAuthentication.class);
    /** At most one WARN about refused peers per this interval: a misconfigured fleet must not flood the log. */
    static final long REFUSAL_LOG_INTERVAL_NANOS = TimeUnit.MINUTES.toNanos(1);

    private final SSLContext ssl;
    private final byte[] secret;
    private final SecureRandom random = new SecureRandom();
    private boolean refusalLogged;
    private long lastRefusalLogNanos;
    private int refusalsNotLogged;

    PeerAuthentication(SSLContext ssl, String sharedSecret) {
        this.ssl = ssl;
        this.secret = sharedSecret == null ? null : sharedSecret.getBytes(StandardCharsets.UTF_8);
    }

    boolean requiresSecret() {
        return secret != null;
    }

    boolean usesTls() {
        return ssl != null;
    }

    /** Secures a freshly connected client channel; throws with the reason when the peer is not accepted. */
    Link client(SocketChannel channel, String host, int port) throws IOException {
        Link link = wrap(channel, host, port, true);
        if (secret == null) {
            return link;
        }
        byte[] binding = binding(endpoint(host, port), link, true);
        byte[] clientNonce = nonce();
        link.writeFully(ByteBuffer.allocate(4 + NONCE).putInt(HELLO_MAGIC).put(clientNonce).flip());
        String refusal = Wire.readResponse(link);
        if (refusal != null) {
            throw new TransportException("Peer " + host + ":" + port + " refused this connector's authentication: " + refusal);
        }
        ByteBuffer answer = ByteBuffer.allocate(NONCE + PROOF);
        link.readFully(answer);
        answer.flip();
        byte[] serverNonce = new byte[NONCE];
        byte[] serverProof = new byte[PROOF];
        answer.get(serverNonce).get(serverProof);
        if (!MessageDigest.isEqual(serverProof, proof(SERVER_ROLE, clientNonce, serverNonce, binding))) {
            throw new TransportException("Peer " + host + ":" + port + " could not prove the shared secret for this "
                    + "connection to " + endpoint(host, port) + " (its embedded shared-secret setting differs from this "
                    + "connector's, or it relays another endpoint's answers)");
        }
        link.writeFully(ByteBuffer.wrap(proof(CLIENT_ROLE, serverNonce, clientNonce, binding)));
        refusal = Wire.readResponse(link);
        if (refusal != null) {
            throw new TransportException("Peer " + host + ":" + port + " refused this connector's authentication: " + refusal);
        }
        return link;
    }

    /**
     * Secures an accepted channel; {@code null} when the peer failed (it has been told why, where that is safe,
     * and nothing else it sent was read). {@code endpoint}: this server's {@code host:port} as its metadata publishes it.
     */
    Link server(SocketChannel channel, String endpoint) throws IOException {
        Link link = wrap(channel, null, 0, false);
        if (secret == null) {
            return link;
        }
        ByteBuffer hello = ByteBuffer.allocate(4 + NONCE);
        if (!link.readFullyOrEof(hello.limit(4))) {
            return null;
        }
        if (hello.getInt(0) == UNBOUND_HELLO_MAGIC) {
            refused(link, "it sent the older, unbound shared-secret hello (an older nixl-connect)");
            Wire.writeError(link, "this peer refuses the older shared-secret handshake, whose proofs a relaying peer "
                    + "could pass on: upgrade nixl-connect on the connecting side");
            return null;
        }
        if (hello.getInt(0) != HELLO_MAGIC) {
            refused(link, "it sent no proof of the shared secret (it has none set, or is no nixl-connect peer)");
            Wire.writeError(link, "this peer requires authentication: set the same embedded shared secret on both sides");
            return null;
        }
        link.readFully(hello.limit(4 + NONCE));
        byte[] clientNonce = new byte[NONCE];
        hello.position(4);
        hello.get(clientNonce);
        byte[] binding = binding(endpoint, link, false);
        byte[] serverNonce = nonce();
        ByteBuffer answer = ByteBuffer.allocate(1 + NONCE + PROOF);
        answer.put(Wire.OK).put(serverNonce).put(proof(SERVER_ROLE, clientNonce, serverNonce, binding)).flip();
        link.writeFully(answer);
        ByteBuffer clientProof = ByteBuffer.allocate(PROOF);
        if (!link.readFullyOrEof(clientProof)) {
            // what a peer with another secret does: it finds this server's proof wrong and hangs up
            refused(link, "it rejected this connector's proof of the shared secret and closed: its secret differs, or it "
                    + "was connected to another endpoint");
            return null;
        }
        if (!MessageDigest.isEqual(clientProof.array(), proof(CLIENT_ROLE, serverNonce, clientNonce, binding))) {
            refused(link, "its proof of the shared secret is wrong: its secret differs, or it relays another endpoint's "
                    + "handshake");
            Wire.writeError(link, "authentication failed: the shared secret does not match");
            return null;
        }
        Wire.writeOk(link);
        return link;
    }

    /** Answers a peer that offers authentication to a server that has no secret. */
    void refuseUnexpectedHello(Link link) throws IOException {
        refused(link, "it offers a proof of a shared secret, and this connector has none set");
        Wire.writeError(link, "this peer has no embedded shared secret configured; set the same secret on both sides or none");
    }

    /** {@code host:port}, as {@link EmbeddedTransport#endpoint()} writes it. */
    static String endpoint(String host, int port) {
        return host + ":" + port;
    }

    /**
     * What both sides' proofs are bound to besides the nonces: the listening endpoint and, over TLS, both
     * certificates (the server's first), each side reading its own and the peer's from the session.
     */
    static byte[] binding(String endpoint, Link link, boolean client) throws IOException {
        byte[] channel = new byte[0];
        if (link.tlsSession() != null) {
            SSLSession session = link.tlsSession();
            Certificate[] peer = session.getPeerCertificates();
            Certificate[] own = session.getLocalCertificates();
            if (peer == null || peer.length == 0 || own == null || own.length == 0) {
                throw new SSLPeerUnverifiedException("both sides must present a certificate");
            }
            byte[] server = sha256(client ? peer[0] : own[0]);
            byte[] connecting = sha256(client ? own[0] : peer[0]);
            channel = ByteBuffer.allocate(server.length + connecting.length).put(server).put(connecting).array();
        }
        return binding(endpoint, channel);
    }

    /** The binding to {@code endpoint} and the channel's own bytes (empty without TLS). */
    static byte[] binding(String endpoint, byte[] channel) {
        byte[] name = endpoint.getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(2 + name.length + 2 + channel.length).putShort((short) name.length).put(name)
                .putShort((short) channel.length).put(channel).array();
    }

    private static byte[] sha256(Certificate certificate) throws IOException {
        try {
            return MessageDigest.getInstance("SHA-256").digest(certificate.getEncoded());
        } catch (GeneralSecurityException e) {
            throw new IOException("cannot bind the handshake to the TLS certificates: " + e.getMessage(), e);
        }
    }

    /** Logs a peer refused for the shared secret: one WARN per {@link #REFUSAL_LOG_INTERVAL_NANOS}, the rest counted. */
    private void refused(Link link, String why) {
        int notLogged;
        synchronized (this) {
            long now = System.nanoTime();
            if (refusalLogged && now - lastRefusalLogNanos < REFUSAL_LOG_INTERVAL_NANOS) {
                refusalsNotLogged++;
                return;
            }
            refusalLogged = true;
            lastRefusalLogNanos = now;
            notLogged = refusalsNotLogged;
            refusalsNotLogged = 0;
        }
        log.warn("Embedded transport: refused a connection from {}: {}. Set the same shared secret on every peer "
                        + "(embedded shared-secret, nixl.connect.embedded.shared-secret), or none on any{}",
                link.channel.socket().getInetAddress(), why,
                notLogged == 0 ? "" : " (" + notLogged + " more refused since the last such warning)");
    }

    private Link wrap(SocketChannel channel, String host, int port, boolean client) throws IOException {
        if (ssl == null) {
            return Link.plain(channel);
        }
        SSLSocket socket = (SSLSocket) ssl.getSocketFactory().createSocket(channel.socket(), host, port, true);
        socket.setUseClientMode(client);
        if (!client) {
            socket.setNeedClientAuth(true);
        }
        Link link = Link.tls(channel, socket);
        socket.startHandshake();
        return link;
    }

    private byte[] nonce() {
        byte[] nonce = new byte[NONCE];
        random.nextBytes(nonce);
        return nonce;
    }

    /** The proof of {@code role} (package-private for the fuzz campaign, which forges and relays proofs). */
    byte[] proof(byte[] role, byte[] first, byte[] second, byte[] binding) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(secret, "HmacSHA256"));
            mac.update(role);
            mac.update(first);
            mac.update(second);
            mac.update(binding);
            return mac.doFinal();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is unavailable in this JVM", e);
        }
    }
}
