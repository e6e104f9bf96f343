package io.nixlconnect.transport.embedded;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.nixlconnect.ChildJvm;
import io.nixlconnect.internal.NativeMemory;
import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryRegistration;
import io.nixlconnect.transport.MemoryType;
import io.nixlconnect.transport.TransferHandle;
import io.nixlconnect.transport.TransferOp;
import io.nixlconnect.transport.TransportAgent;
import java.io.BufferedReader;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.ref.Reference;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The confused deputy of issue 23 item 2, across three processes: a bystander (its own JVM; run as {@code nobody}
 * when this test runs as root, as the attack was) with a secret in its memory; a hostile peer (a thread here, speaking
 * the protocol by hand) that knows the bystander's pid, answers a reader's IDENTIFY with the bystander's own answer
 * and its grants with the bystander's pid; and an honest reader (this JVM's embedded transport), which the kernel lets
 * read the bystander. Before, the reader's own {@code process_vm_readv} copied the bystander's 262,144 secret bytes
 * into its buffer. Now the grant must be proven by the process it names ({@link GrantProof}): the bystander holds no
 * such proof, so the reader streams what the hostile peer itself serves, and reads that peer over TCP from then on.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SameHostConfusedDeputyTest {

    private static final byte SERVED_BY_THE_PEER = 0x2A;

    @TempDir
    Path work;

    @Test
    void aPeerThatGrantsAThirdProcesssPidGetsNoCopyOfThatProcessMemory() throws Exception {
        assumeTrue(CrossMemoryAttach.unavailableReason() == null, CrossMemoryAttach::unavailableReason);
        Process bystander = startAsAnotherUserWhereRoot(work, SameHostVictim.class);
        try (BufferedReader lines = new BufferedReader(new InputStreamReader(bystander.getInputStream(),
                StandardCharsets.UTF_8))) {
            String[] ready = awaitReady(lines);
            int bystanderPort = Integer.parseInt(ready[1]);
            long bystanderPid = Long.parseLong(ready[2]);
            long secretAddress = Long.parseLong(ready[3]);
            if (isRoot()) {
                assertThat(uidOf(bystanderPid)).as("the bystander runs as another user").isNotEqualTo("0");
            }
            byte[] secret = SameHostVictim.secret();
            try (HostilePeer hostile = new HostilePeer(bystanderPort, bystanderPid, secretAddress);
                 EmbeddedTransport reader = EmbeddedTransport.open(EmbeddedSettings.defaults())) {
                for (int attempt = 0; attempt < 2; attempt++) {
                    ByteBuffer target = ByteBuffer.allocateDirect(secret.length);
                    MemoryRegion local = new MemoryRegion(NativeMemory.addressOf(target), secret.length,
                            MemoryType.DRAM, 0);
                    try (TransportAgent agent = reader.createAgent("reader-" + attempt);
                         MemoryRegistration registration = agent.registerMemory(local)) {
                        String peer = agent.loadRemoteAgent(new EmbeddedMetadata("hostile", "127.0.0.1",
                                hostile.port()).encode());
                        // The metadata the hostile peer handed over names the bystander's secret as its descriptor.
                        TransferHandle read = agent.postTransfer(TransferOp.READ, List.of(local), peer,
                                List.of(new MemoryRegion(secretAddress, secret.length, MemoryType.DRAM, 0)),
                                ServedMemory.newCredential());
                        read.completion().get(30, TimeUnit.SECONDS);
                        byte[] landed = NativeMemory.copyOut(local.address(), secret.length);
                        assertThat(bytesOfTheSecret(landed, secret)).as("bytes of the bystander's secret the reader "
                                + "copied (attempt %d; the hostile peer answered %d grants)", attempt,
                                hostile.grants.get()).isZero();
                        byte[] expected = new byte[secret.length];
                        Arrays.fill(expected, SERVED_BY_THE_PEER);
                        assertThat(landed).as("what the hostile peer itself served, over TCP").isEqualTo(expected);
                        assertThat(read.path()).isEqualTo(SameHostPeer.TCP);
                    } finally {
                        Reference.reachabilityFence(target);
                    }
                }
                assertThat(hostile.grants.get()).as("the proof failed once; after that the peer is read over TCP")
                        .isEqualTo(1);
                assertThat(reader.peerPaths().toString()).contains("does not hold the grant's proof");
            }
        } finally {
            bystander.getOutputStream().close();
            if (!bystander.waitFor(10, TimeUnit.SECONDS)) {
                bystander.destroyForcibly();
            }
        }
    }

    /**
     * A reader from before grant proofs (type 5, no challenge) would copy from whatever pid it is told: it is declined,
     * not granted, and streams the same ranges on the same connection. Before, it was granted this process's pid.
     */
    @Test
    void anOlderReadersUnboundGrantIsDeclinedAndItStreams() throws Exception {
        byte[] content = EmbeddedCredentialTest.random(1 << 17);
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback(), "owner", TransferOp.READ, content);
             RawPeer older = new RawPeer(served.port())) {
            older.send(RawPeer.request(Wire.READ_GRANT_UNBOUND, "owner", served.credential, served.address,
                    content.length));
            assertThat(older.readBytes(1)[0]).as("declined, not granted").isEqualTo(Wire.DECLINED);
            int length = ByteBuffer.wrap(older.readBytes(2)).getShort() & 0xFFFF;
            assertThat(new String(older.readBytes(length), StandardCharsets.UTF_8)).contains("not bound");
            older.send(RawPeer.request(Wire.READ, "owner", served.credential, served.address, content.length));
            assertThat(older.answer()).isEqualTo(RawPeer.Answer.OK);
            assertThat(older.readBytes(content.length)).isEqualTo(content);
            older.send(RawPeer.request(Wire.NOTIFY, "owner", served.credential));
            assertThat(older.answer()).isEqualTo(RawPeer.Answer.OK);
            served.window.notified().get(10, TimeUnit.SECONDS);
        }
    }

    private static int bytesOfTheSecret(byte[] landed, byte[] secret) {
        int same = 0;
        for (int i = 0; i < landed.length; i++) {
            if (landed[i] == secret[i]) {
                same++;
            }
        }
        return same;
    }

    static boolean isRoot() {
        return "root".equals(System.getProperty("user.name"));
    }

    static String uidOf(long pid) throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
            if (line.startsWith("Uid:")) {
                return line.split("\\s+")[1];
            }
        }
        throw new IOException("no Uid line for pid " + pid);
    }

    /**
     * Starts {@code main} in a JVM of its own on this test's classes, as {@code nobody} (setpriv) when this JVM runs as
     * root, else as this user. The jars it needs are copied where that user can read them.
     */
    static Process startAsAnotherUserWhereRoot(Path work, Class<?> main, String... args) throws IOException {
        List<String> command = new ArrayList<>();
        List<String> classPath = new ArrayList<>();
        boolean asNobody = isRoot() && Files.isExecutable(Path.of("/usr/bin/setpriv"));
        Path jars = Files.createDirectories(work.resolve("jars"));
        Path jnaTemp = Files.createDirectories(work.resolve("jna"));
        for (String entry : System.getProperty("java.class.path").split(java.io.File.pathSeparator)) {
            Path path = Path.of(entry);
            if (Files.isDirectory(path)) {
                classPath.add(entry);
            } else if (path.getFileName().toString().matches("(jna|slf4j-api|logback).*\\.jar")) {
                Path copy = jars.resolve(path.getFileName());
                Files.copy(path, copy);
                classPath.add(copy.toString());
            }
        }
        if (asNobody) {
            Files.setPosixFilePermissions(work, PosixFilePermissions.fromString("rwxr-xr-x"));
            Files.setPosixFilePermissions(jars, PosixFilePermissions.fromString("rwxr-xr-x"));
            Files.setPosixFilePermissions(jnaTemp, PosixFilePermissions.fromString("rwxrwxrwx"));
            try (var copies = Files.list(jars)) {
                for (Path copy : copies.toList()) {
                    Files.setPosixFilePermissions(copy, PosixFilePermissions.fromString("rw-r--r--"));
                }
            }
            command.addAll(List.of("/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"));
        }
        command.addAll(ChildJvm.command("-Xmx64m",
                "-XX:ErrorFile=/dev/null", "-Djna.tmpdir=" + jnaTemp, "-Djava.io.tmpdir=" + jnaTemp, "-cp",
                String.join(java.io.File.pathSeparator, classPath), main.getName()));
        command.addAll(List.of(args));
        return new ProcessBuilder(command).directory(work.toFile()).redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
    }

    static String[] awaitReady(BufferedReader lines) throws IOException {
        String line;
        while ((line = lines.readLine()) != null) {
            if (line.startsWith("READY ")) {
                return line.split(" ");
            }
        }
        throw new AssertionError("the child process ended before it was ready");
    }

    /**
     * The hostile peer: answers IDENTIFY with the bystander's own answer (asked of the bystander, which answers anyone),
     * every grant with the bystander's pid (and, for a proven grant, an address in the bystander's memory as its
     * "proof"), and READ with bytes of its own. It counts the grants it answered.
     */
    private static final class HostilePeer implements AutoCloseable {
        final AtomicInteger grants = new AtomicInteger();
        private final ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        private final int bystanderPort;
        private final long bystanderPid;
        private final long bystanderAddress;
        private final Thread acceptor;

        HostilePeer(int bystanderPort, long bystanderPid, long bystanderAddress) throws IOException {
            this.bystanderPort = bystanderPort;
            this.bystanderPid = bystanderPid;
            this.bystanderAddress = bystanderAddress;
            acceptor = new Thread(this::accept, "hostile-peer");
            acceptor.setDaemon(true);
            acceptor.start();
        }

        int port() {
            return server.getLocalPort();
        }

        private void accept() {
            while (!server.isClosed()) {
                try {
                    Socket socket = server.accept();
                    Thread serving = new Thread(() -> serve(socket), "hostile-peer-connection");
                    serving.setDaemon(true);
                    serving.start();
                } catch (IOException closed) {
                    return;
                }
            }
        }

        private void serve(Socket socket) {
            try (socket; DataInputStream in = new DataInputStream(socket.getInputStream());
                 DataOutputStream out = new DataOutputStream(socket.getOutputStream())) {
                while (true) {
                    int magic = in.readInt();
                    assertThat(magic).isEqualTo(Wire.MAGIC);
                    byte type = in.readByte();
                    int agentLength = in.readUnsignedShort();
                    int credentialLength = in.readUnsignedShort();
                    int count = in.readInt();
                    in.readFully(new byte[agentLength + credentialLength]);
                    long total = 0;
                    for (int i = 0; i < count; i++) {
                        in.readLong();
                        total += in.readLong();
                    }
                    switch (type) {
                        case 4 -> out.write(identifyTheBystander()); // IDENTIFY
                        case 5, 10 -> { // READ_GRANT before grant proofs (5), and with them (10)
                            if (type == 10) {
                                in.readFully(new byte[GrantProof.CHALLENGE_BYTES]);
                            }
                            grants.incrementAndGet();
                            out.writeByte(Wire.OK);
                            out.writeLong(bystanderPid);
                            if (type == 10) {
                                out.writeLong(bystanderAddress);
                            }
                            out.flush();
                            in.readByte(); // DONE or ABORTED
                            out.writeByte(Wire.OK);
                        }
                        case 1, 6 -> { // READ, READ_INLINE: bytes of its own
                            out.writeByte(Wire.OK);
                            byte[] served = new byte[(int) total];
                            Arrays.fill(served, SERVED_BY_THE_PEER);
                            out.write(served);
                        }
                        case 3 -> out.writeByte(Wire.OK); // NOTIFY
                        default -> {
                            return;
                        }
                    }
                    out.flush();
                }
            } catch (IOException ended) {
                // the reader closed the connection
            }
        }

        /** The bystander's answer to an IDENTIFY, as anyone may ask it. */
        private byte[] identifyTheBystander() throws IOException {
            try (RawPeer asking = new RawPeer(bystanderPort)) {
                asking.send(RawPeer.request(Wire.IDENTIFY, "bystander", ServedMemory.newCredential()));
                return asking.readBytes(1 + SameHostIdentity.ENCODED_BYTES);
            }
        }

        @Override
        public void close() throws IOException {
            server.close();
        }
    }
}
