package io.nixlconnect.transport.embedded;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;
import static org.awaitility.Awaitility.await;

import io.nixlconnect.internal.NativeMemory;
import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryType;
import io.nixlconnect.transport.PassiveWindow;
import io.nixlconnect.transport.TransferOp;
import io.nixlconnect.transport.TransportException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.ref.Reference;
import java.net.InetAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A seeded fuzz campaign of the embedded wire protocol against a live server on loopback: valid requests
 * (right and wrong credentials, READ, WRITE, NOTIFY, READ_INLINE, WRITE_INLINE with its bytes, two inline
 * requests on one connection, authentication hellos) are mutated (bit flips, boundary
 * values in length fields, truncation, extension, splicing, random bytes) and sent, each on its own connection.
 *
 * <p>What must hold: every connection ends promptly; no byte outside the published windows changes, nor any
 * byte of the read-only window; a real peer still reads afterwards; the server ends with no connection open.
 * CI runs {@value #DEFAULT_ITERATIONS} iterations (bounded to {@value #DEFAULT_SECONDS} s). A longer run:
 * {@code -Dnixl.fuzz.iterations=200000 -Dnixl.fuzz.seconds=1800 -Dnixl.fuzz.seed=N} (see docs/reliability.md).
 */
@Timeout(value = 10, unit = TimeUnit.MINUTES)
class EmbeddedWireFuzzTest {

    static final int DEFAULT_ITERATIONS = 20000;
    static final int DEFAULT_SECONDS = 60;
    private static final int GUARD = 1024;
    private static final int WINDOW = 4096;
    private static final int[] INTERESTING = {0, 1, -1, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0x7FFFFFFF,
        0x80000000, Wire.MAX_RANGES, Wire.MAX_RANGES + 1, Wire.MAX_CREDENTIAL, Wire.MAX_AGENT_NAME + 1, 16, 32};

    @Test
    void mutatedRequestsNeitherHarmTheServerNorTouchMemoryOutsideWhatTheyMayReach() throws Exception {
        campaign(ServedMemory.loopback().withTimeouts(Duration.ofSeconds(2), Duration.ofSeconds(2)),
                Integer.getInteger("nixl.fuzz.iterations", DEFAULT_ITERATIONS),
                Long.getLong("nixl.fuzz.seconds", DEFAULT_SECONDS), () -> { });
    }

    /**
     * The same campaign while another process holds more connections than the server's limits allow, each with a
     * refused request's ranges trickling in (issue 23 item 1): the mutated requests are still answered or dropped
     * promptly, and a real peer reads a window every 500 of them.
     */
    @Test
    void mutatedRequestsWhileAnotherProcessTricklesConnectionsPastTheLimits() throws Exception {
        int iterations = Integer.getInteger("nixl.fuzz.iterations", DEFAULT_ITERATIONS) / 4;
        long seconds = Long.getLong("nixl.fuzz.seconds", DEFAULT_SECONDS) / 2;
        EmbeddedSettings settings = ServedMemory.loopback().withTimeouts(Duration.ofSeconds(2), Duration.ofSeconds(2))
                .withServerConnectionLimits(48, 32);
        Process[] attacker = new Process[1];
        try {
            campaign(settings, iterations, seconds, new java.util.function.Consumer<ServedMemory>() {
                private int calls;

                @Override
                public void accept(ServedMemory served) {
                    try {
                        if (calls++ == 0) {
                            attacker[0] = EmbeddedSlotHoldingTest.startAttacker(served.port(), 96, 1, (int) seconds + 30,
                                    200);
                            EmbeddedSlotHoldingTest.awaitLine(attacker[0], "READY");
                        } else if (calls % 500 == 0) {
                            byte[] credential = ServedMemory.newCredential();
                            int length = WINDOW + 2 * GUARD;
                            PassiveWindow window = served.agent.openWindow(TransferOp.READ,
                                    List.of(new MemoryRegion(served.address, length, MemoryType.DRAM, 0)), credential);
                            try (EmbeddedTransport client = EmbeddedTransport.open(ServedMemory.loopback())) {
                                assertThat(EmbeddedHostileLoadTest.read(client, served, credential, length))
                                        .as("a real peer's read, iteration %d", calls).isEqualTo(served.content());
                            }
                            window.notified().get(10, TimeUnit.SECONDS);
                        }
                    } catch (Exception e) {
                        throw new AssertionError(e);
                    }
                }
            }, () -> {
                if (attacker[0] != null) {
                    attacker[0].destroy();
                }
            });
        } finally {
            if (attacker[0] != null) {
                attacker[0].destroyForcibly();
                attacker[0].waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    private static void campaign(EmbeddedSettings settings, int iterations, long seconds, Runnable beforeEach)
            throws Exception {
        campaign(settings, iterations, seconds, served -> beforeEach.run(), () -> { });
    }

    /**
     * Runs the campaign against a server with {@code settings}; {@code beforeEach} runs before the first iteration and
     * every one after it, {@code beforeChecks} once the iterations are done.
     */
    private static void campaign(EmbeddedSettings settings, int iterations, long seconds,
            java.util.function.Consumer<ServedMemory> beforeEach, Runnable beforeChecks) throws Exception {
        long seed = Long.getLong("nixl.fuzz.seed", System.nanoTime());
        SplittableRandom random = new SplittableRandom(seed);
        byte[] readableContent = EmbeddedCredentialTest.random(WINDOW + 2 * GUARD);
        try (ServedMemory served = new ServedMemory(settings, "fuzzed", TransferOp.READ, readableContent)) {
            // The published windows are the middle of each buffer; the guards around them must never change.
            served.window.close();
            ByteBuffer writableBuffer = ByteBuffer.allocateDirect(WINDOW + 2 * GUARD);
            byte[] writableContent = EmbeddedCredentialTest.random(WINDOW + 2 * GUARD);
            writableBuffer.put(writableContent).flip();
            long writableAddress = NativeMemory.addressOf(writableBuffer);
            served.agent.registerMemory(new MemoryRegion(writableAddress, writableContent.length, MemoryType.DRAM, 0));
            long readable = served.address + GUARD;
            long writable = writableAddress + GUARD;
            List<PassiveWindow> windows = new ArrayList<>();
            byte[][] credentials = new byte[2][];
            Runnable reopen = () -> {
                credentials[0] = ServedMemory.newCredential();
                credentials[1] = ServedMemory.newCredential();
                windows.add(served.agent.openWindow(TransferOp.READ,
                        List.of(new MemoryRegion(readable, WINDOW, MemoryType.DRAM, 0)), credentials[0]));
                windows.add(served.agent.openWindow(TransferOp.WRITE,
                        List.of(new MemoryRegion(writable, WINDOW, MemoryType.DRAM, 0)), credentials[1]));
            };
            reopen.run();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
            int done = 0;
            int answered = 0;
            for (; done < iterations && System.nanoTime() < deadline; done++) {
                if (windows.stream().allMatch(w -> w.notified().isDone())) {
                    windows.clear();
                    reopen.run();
                }
                beforeEach.accept(served);
                byte[] message = mutate(seed(random, credentials, readable, writable), random);
                if (exchange(served.port(), message, seed, done)) {
                    answered++;
                }
            }
            windows.forEach(PassiveWindow::close);
            beforeChecks.run();
            System.out.printf("embedded wire fuzz: seed %d, %d iterations, %d answered%n", seed, done, answered);
            assertThat(done).isGreaterThan(Math.min(iterations, 500));
            assertThat(served.content()).as("read-only window and its guards (seed %d)", seed).isEqualTo(readableContent);
            byte[] writableNow = NativeMemory.copyOut(writableAddress, writableContent.length);
            assertThat(Arrays.copyOfRange(writableNow, 0, GUARD)).as("guard (seed %d)", seed)
                    .isEqualTo(Arrays.copyOfRange(writableContent, 0, GUARD));
            assertThat(Arrays.copyOfRange(writableNow, GUARD + WINDOW, writableNow.length)).as("guard (seed %d)", seed)
                    .isEqualTo(Arrays.copyOfRange(writableContent, GUARD + WINDOW, writableContent.length));
            // Still serving: a real peer reads a fresh window.
            byte[] credential = ServedMemory.newCredential();
            PassiveWindow fresh = served.agent.openWindow(TransferOp.READ,
                    List.of(new MemoryRegion(served.address, readableContent.length, MemoryType.DRAM, 0)), credential);
            try (EmbeddedTransport client = EmbeddedTransport.open(ServedMemory.loopback())) {
                assertThat(EmbeddedHostileLoadTest.read(client, served, credential, readableContent.length))
                        .isEqualTo(readableContent);
            }
            fresh.notified().get(10, TimeUnit.SECONDS);
            await().atMost(Duration.ofSeconds(10)).until(() -> served.transport.server().connectionCount() == 0);
            assertThat(served.transport.server().connectionCount()).isZero();
            Reference.reachabilityFence(writableBuffer); // its native memory must outlive the server's use of it
        }
    }

    /**
     * Shared-secret handshakes against a server that requires the secret (issue 23 item 3): each connection's proof is
     * the honest one, or one a relay would pass on (made for another listening endpoint), a replay (made for an
     * earlier server nonce), one of the older unbound handshake, the server's own proof reflected, a mutation of the
     * honest one, or random bytes — then a request. Only honest proofs are accepted and served; every other connection
     * gets an ERROR and is closed, and no request on it is answered.
     */
    @Test
    void handshakesRelayedReplayedOrMutatedNeverAuthenticate() throws Exception {
        int iterations = Integer.getInteger("nixl.fuzz.iterations", DEFAULT_ITERATIONS) / 10;
        long seconds = Long.getLong("nixl.fuzz.seconds", DEFAULT_SECONDS) / 2;
        long seed = Long.getLong("nixl.fuzz.seed", System.nanoTime());
        SplittableRandom random = new SplittableRandom(seed);
        String secret = "the cluster's shared secret, fuzzed";
        PeerAuthentication prover = new PeerAuthentication(null, secret);
        EmbeddedSettings settings = ServedMemory.loopback().withSharedSecret(secret)
                .withTimeouts(Duration.ofSeconds(2), Duration.ofSeconds(2));
        try (ServedMemory served = new ServedMemory(settings, "fuzzed", TransferOp.READ, new byte[64])) {
            byte[] honestBinding = PeerAuthentication.binding(served.transport.endpoint(), new byte[0]);
            byte[] relayedBinding = PeerAuthentication.binding("127.0.0.1:" + (served.port() == 65535 ? 1
                    : served.port() + 1), new byte[0]);
            byte[] earlierServerNonce = new byte[PeerAuthentication.NONCE];
            int[] accepted = new int[8];
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
            int done = 0;
            for (; done < iterations && System.nanoTime() < deadline; done++) {
                int kind = random.nextInt(7);
                try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), served.port())) {
                    socket.setSoTimeout(10_000);
                    java.io.DataInputStream in = new java.io.DataInputStream(socket.getInputStream());
                    java.io.OutputStream out = socket.getOutputStream();
                    byte[] clientNonce = bytes(random, PeerAuthentication.NONCE);
                    int magic = kind == 3 ? PeerAuthentication.UNBOUND_HELLO_MAGIC : PeerAuthentication.HELLO_MAGIC;
                    out.write(ByteBuffer.allocate(4 + PeerAuthentication.NONCE).putInt(magic).put(clientNonce).array());
                    int status = in.read();
                    if (kind == 3) {
                        assertThat(status).as("seed %d, iteration %d: the unbound hello", seed, done).isEqualTo(Wire.ERROR);
                        continue;
                    }
                    assertThat(status).isEqualTo(Wire.OK);
                    byte[] serverNonce = in.readNBytes(PeerAuthentication.NONCE);
                    byte[] serverProof = in.readNBytes(PeerAuthentication.PROOF);
                    byte[] honest = prover.proof(PeerAuthentication.CLIENT_ROLE, serverNonce, clientNonce, honestBinding);
                    byte[] proof = switch (kind) {
                        case 0 -> honest;
                        case 1 -> prover.proof(PeerAuthentication.CLIENT_ROLE, serverNonce, clientNonce, relayedBinding);
                        case 2 -> prover.proof(PeerAuthentication.CLIENT_ROLE, earlierServerNonce, clientNonce,
                                honestBinding);
                        case 4 -> serverProof;
                        case 5 -> mutate(honest, random);
                        default -> bytes(random, PeerAuthentication.PROOF);
                    };
                    System.arraycopy(serverNonce, 0, earlierServerNonce, 0, serverNonce.length);
                    proof = Arrays.copyOf(proof, PeerAuthentication.PROOF); // a mutation padded or cut to length
                    boolean isHonest = Arrays.equals(proof, honest);
                    out.write(proof);
                    out.write(RawPeer.request(Wire.NOTIFY, "fuzzed", ServedMemory.newCredential()));
                    out.flush();
                    int verdict = in.read();
                    if (isHonest) {
                        assertThat(verdict).as("seed %d, iteration %d: the honest proof", seed, done).isEqualTo(Wire.OK);
                        assertThat(in.read()).as("the request on it is answered").isEqualTo(Wire.ERROR);
                        accepted[kind]++;
                    } else {
                        assertThat(verdict).as("seed %d, iteration %d: proof kind %d", seed, done, kind)
                                .isEqualTo(Wire.ERROR);
                        in.readNBytes(in.readUnsignedShort());
                        assertThat(in.read()).as("seed %d, iteration %d: closed, nothing answered", seed, done)
                                .isEqualTo(-1);
                    }
                } catch (java.net.SocketException reset) {
                    // a reset is an end too; only an accepted forgery fails the campaign
                }
            }
            System.out.printf("embedded handshake fuzz: seed %d, %d handshakes, %d honest accepted%n", seed, done,
                    accepted[0] + accepted[5]);
            assertThat(accepted[0]).as("honest handshakes accepted (seed %d)", seed).isPositive();
            assertThat(done).isGreaterThan(Math.min(iterations, 200));
        }
    }

    @Test
    void mutatedAgentMetadataIsRefusedCleanly() {
        long seed = Long.getLong("nixl.fuzz.seed", System.nanoTime());
        SplittableRandom random = new SplittableRandom(seed);
        byte[] valid = new EmbeddedMetadata("agent-name", "127.0.0.1", 4242).encode();
        int iterations = Integer.getInteger("nixl.fuzz.iterations", DEFAULT_ITERATIONS) * 25;
        for (int i = 0; i < iterations; i++) {
            byte[] mutated = mutate(valid, random);
            try {
                EmbeddedMetadata decoded = EmbeddedMetadata.decode(mutated);
                assertThat(decoded.agent()).isNotEmpty();
                assertThat(decoded.port()).isBetween(1, 65535);
            } catch (TransportException expected) {
                // a clean refusal
            } catch (RuntimeException e) {
                fail("seed " + seed + ", iteration " + i + ": " + Arrays.toString(mutated), e);
            }
        }
    }

    /** A well-formed message to start from. */
    private static byte[] seed(SplittableRandom random, byte[][] credentials, long readable, long writable) {
        byte[] credential = switch (random.nextInt(4)) {
            case 0 -> credentials[0];
            case 1 -> credentials[1];
            default -> ServedMemory.newCredential();
        };
        long offset = random.nextInt(WINDOW);
        long length = random.nextInt(WINDOW - (int) offset + 1);
        return switch (random.nextInt(9)) {
            case 0 -> RawPeer.request(Wire.READ, "fuzzed", credential, readable + offset, length);
            case 1 -> concat(RawPeer.request(Wire.WRITE, "fuzzed", credential, writable + offset, length),
                    bytes(random, (int) length));
            case 2 -> RawPeer.request(Wire.NOTIFY, "fuzzed", credential);
            case 3 -> ByteBuffer.allocate(4 + PeerAuthentication.NONCE).putInt(PeerAuthentication.HELLO_MAGIC).array();
            case 4 -> concat(RawPeer.request(Wire.READ, "fuzzed", credential, readable, 16, readable + 64, 64),
                    RawPeer.request(Wire.NOTIFY, "fuzzed", credential));
            case 5 -> RawPeer.request(Wire.READ_INLINE, "fuzzed", credential, readable + offset, length);
            case 6 -> concat(RawPeer.request(Wire.WRITE_INLINE, "fuzzed", credential, writable + offset, length),
                    bytes(random, (int) length));
            case 7 -> concat(RawPeer.request(Wire.WRITE_INLINE, "fuzzed", credential, writable, 16, writable + 64, 64),
                    concat(bytes(random, 80), RawPeer.request(Wire.READ_INLINE, "fuzzed", credential, readable, 32)));
            default -> bytes(random, 1 + random.nextInt(64));
        };
    }

    static byte[] mutate(byte[] original, SplittableRandom random) {
        byte[] message = original.clone();
        int rounds = 1 + random.nextInt(4);
        for (int r = 0; r < rounds && message.length > 0; r++) {
            switch (random.nextInt(7)) {
                case 0 -> message[random.nextInt(message.length)] ^= (byte) (1 << random.nextInt(8));
                case 1 -> message[random.nextInt(message.length)] = (byte) random.nextInt(256);
                case 2 -> {
                    int at = random.nextInt(Math.max(1, message.length - 3));
                    int value = INTERESTING[random.nextInt(INTERESTING.length)];
                    for (int i = 0; i < 4 && at + i < message.length; i++) {
                        message[at + i] = (byte) (value >>> (24 - 8 * i));
                    }
                }
                case 3 -> message = Arrays.copyOf(message, random.nextInt(message.length + 1));
                case 4 -> message = concat(message, bytes(random, 1 + random.nextInt(32)));
                case 5 -> {
                    int at = random.nextInt(message.length);
                    message = concat(Arrays.copyOf(message, at), Arrays.copyOfRange(message, random.nextInt(message.length),
                            message.length));
                }
                default -> {
                    // leave this round's message as it is
                }
            }
        }
        return message;
    }

    /**
     * Sends one message on a fresh connection, ends the sending side, and reads until the server closes;
     * true if it answered anything. Fails if the server keeps the connection open past its timeouts.
     */
    private static boolean exchange(int port, byte[] message, long seed, int iteration) throws IOException {
        try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), port)) {
            socket.setSoTimeout(10_000);
            try {
                socket.getOutputStream().write(message);
                socket.shutdownOutput();
            } catch (IOException closedEarly) {
                return false; // the server already dropped it: fine
            }
            InputStream in = socket.getInputStream();
            ByteArrayOutputStream answer = new ByteArrayOutputStream();
            byte[] chunk = new byte[8192];
            try {
                int n;
                while ((n = in.read(chunk)) >= 0) {
                    answer.write(chunk, 0, n);
                }
            } catch (SocketTimeoutException e) {
                fail("seed " + seed + ", iteration " + iteration + ": the server kept the connection open");
            } catch (java.net.SocketException reset) {
                // a reset is an end too
            }
            return answer.size() > 0;
        }
    }

    private static byte[] bytes(SplittableRandom random, int n) {
        byte[] bytes = new byte[n];
        for (int i = 0; i < n; i++) {
            bytes[i] = (byte) random.nextInt(256);
        }
        return bytes;
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] joined = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, joined, a.length, b.length);
        return joined;
    }
}
