package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.nixlconnect.transport.embedded.EmbeddedSettings;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * READs between this JVM and a {@link PeerProcess} on the same host: directly (cross-memory attach) where
 * both sides allow it and the OS does, over TCP when either side's setting is off or the probe fails.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class SameHostCopyTest {

    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final String DIRECT = "cross-memory-attach";

    private PeerLines peer;
    private final List<Connector> connectors = new ArrayList<>();

    @AfterEach
    void stop() throws Exception {
        connectors.forEach(Connector::close);
        if (peer != null) {
            peer.close();
        }
    }

    private void startPeer(List<String> launcher, String... properties) throws Exception {
        List<String> command = new ArrayList<>(launcher);
        command.addAll(ChildJvm.command("-Xmx256m"));
        command.addAll(List.of(properties));
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), PeerProcess.class.getName()));
        peer = PeerLines.start(new ProcessBuilder(command), "peer");
        assertThat(peer.next("READY")).startsWith("READY");
    }

    private Connector connector(boolean sameHostCopy) {
        Connector connector = new Connector(ConnectorOptions.builder().workerId("reader-" + connectors.size())
                .transports(EmbeddedSettings.defaults().withSameHostCopy(sameHostCopy)).operationTimeout(Duration.ofSeconds(20))
                .build());
        connectors.add(connector);
        return connector;
    }

    /** Reads SIZE bytes the peer publishes; checks them and the path both sides report; returns that path. */
    private String readAndCheck(Connector connector, int size) throws Exception {
        long seed = System.nanoTime();
        peer.send("readable " + size + " " + seed);
        RdmaMetadata metadata = RdmaMetadata.fromJson(peer.next("META ").substring(5));
        try (Descriptor target = Descriptor.allocate(size)) {
            ReadOperation read = connector.beginRead(metadata, target);
            read.waitForCompletion(WAIT);
            String path = read.transferPath();
            assertThat(peer.next("PATH ")).as("the passive side saw the same path")
                    .isEqualTo("PATH " + metadata.notificationKey() + " " + path);
            assertThat(peer.next("DONE ")).isEqualTo("DONE " + metadata.notificationKey() + " DONE");
            assertThat(target.toByteArray()).as("%d bytes over %s", size, path).isEqualTo(PeerProcess.data(seed, size));
            return path;
        }
    }

    @SuppressWarnings("unchecked")
    private static String peerPath(Connector connector) {
        Map<String, String> paths = (Map<String, String>) connector.transportStatus().details().get("peerPaths");
        assertThat(paths).hasSize(1);
        return paths.values().iterator().next();
    }

    private static void assumeTheOsAllowsDirectCopies(Connector connector) {
        String peerPath = peerPath(connector);
        assumeTrue(!peerPath.contains("EPERM") && !peerPath.contains("ENOSYS") && !peerPath.contains("Linux only"),
                () -> "this OS refuses cross-memory attach between two processes: " + peerPath);
    }

    @Test
    void readsAreByteExactOverBothPathsAndSayWhichTheyTook() throws Exception {
        startPeer(List.of());
        Connector direct = connector(true);
        readAndCheck(direct, 1 << 20); // above the one-round-trip limit: probes the peer
        assumeTheOsAllowsDirectCopies(direct);
        Connector tcp = connector(false);
        for (int size : new int[] {1, 4096, 64 << 10, (64 << 10) + 1, (1 << 20) + 3, 64 << 20}) {
            // Up to 64 KiB a READ takes one round trip over the socket: a direct copy would need two.
            assertThat(readAndCheck(direct, size)).isEqualTo(size <= 64 << 10 ? "tcp" : DIRECT);
            assertThat(readAndCheck(tcp, size)).isEqualTo("tcp");
        }
        assertThat(peerPath(direct)).startsWith(DIRECT + " (pid " + peer.process().pid() + ")");
        assertThat(peerPath(tcp)).isEqualTo("tcp (same-host copy is turned off by configuration)");
        assertThat(direct.transportStatus().details()).containsEntry("sameHostCopy", "on");
        assertThat(tcp.transportStatus().details()).containsEntry("sameHostCopy", "off");
    }

    @Test
    void aDirectMultiDescriptorReadGathersEveryBuffer() throws Exception {
        startPeer(List.of());
        Connector connector = connector(true);
        readAndCheck(connector, 1 << 20);
        assumeTheOsAllowsDirectCopies(connector);
        int count = 16;
        peer.send("multi " + count + " 8192 42");
        RdmaMetadata metadata = RdmaMetadata.fromJson(peer.next("META ").substring(5));
        List<Descriptor> targets = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            targets.add(Descriptor.allocate(8192));
        }
        ReadOperation read = connector.beginRead(metadata, targets);
        read.waitForCompletion(WAIT);
        assertThat(read.transferPath()).isEqualTo(DIRECT);
        for (int i = 0; i < count; i++) {
            assertThat(targets.get(i).toByteArray()).as("descriptor %d", i).isEqualTo(PeerProcess.data(42 + i, 8192));
            targets.get(i).close();
        }
    }

    @Test
    void aPeerRestartedOnTheSamePortIsProbedAgain() throws Exception {
        int port;
        try (java.net.ServerSocket free = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            port = free.getLocalPort();
        }
        startPeer(List.of(), "-Dpeer.port=" + port);
        Connector connector = connector(true);
        readAndCheck(connector, 1 << 20);
        assumeTheOsAllowsDirectCopies(connector);
        long firstPid = peer.process().pid();
        assertThat(peerPath(connector)).startsWith(DIRECT + " (pid " + firstPid + ")");
        peer.close();
        startPeer(List.of(), "-Dpeer.port=" + port);
        // The pooled connection is dead and the pid changed: this READ must still arrive, byte-exact ...
        assertThat(readAndCheck(connector, 1 << 20)).isIn(DIRECT, "tcp");
        // ... and the next one copies directly from the new process.
        assertThat(readAndCheck(connector, 1 << 20)).isEqualTo(DIRECT);
        assertThat(peerPath(connector)).startsWith(DIRECT + " (pid " + peer.process().pid() + ")");
    }

    @Test
    void aPeerThatDeclinesIsReadOverTcp() throws Exception {
        startPeer(List.of(), "-Dpeer.sameHostCopy=false");
        Connector connector = connector(true);
        for (int size : new int[] {4096, 16 << 20}) {
            assertThat(readAndCheck(connector, size)).isEqualTo("tcp");
        }
        assertThat(peerPath(connector)).isEqualTo("tcp (same-host copy declined: same-host copy is turned off by configuration)");
    }

    @Test
    void aPeerInAnotherPidNamespaceFailsTheProbeAndIsReadOverTcp() throws Exception {
        assumeTrue(canUnsharePidNamespace(), "needs root and util-linux unshare to start a peer in its own pid namespace");
        startPeer(List.of("unshare", "--pid", "--fork"));
        Connector connector = connector(true);
        for (int size : new int[] {4096, 16 << 20}) {
            assertThat(readAndCheck(connector, size)).isEqualTo("tcp");
        }
        // Its pid there (1) names another process here, which holds no proof of the grant (or cannot be read).
        assertThat(peerPath(connector)).startsWith("tcp (").containsAnyOf("does not hold the grant's proof",
                "proof could not be read from pid 1");
    }

    @Test
    void closingReadablesWhileAPeerCopiesThemNeverHangsLeaksOrLosesBytes() throws Exception {
        // Both connectors in this JVM: the direct path then reads this very process, which the kernel allows.
        Connector owner = connector(true);
        Connector reader = connector(true);
        int size = 32 << 20;
        byte[] data = TestData.random(size);
        java.util.SplittableRandom random = new java.util.SplittableRandom(11);
        int direct = 0;
        try (Descriptor target = Descriptor.allocate(size)) {
            for (int i = 0; i < 40; i++) {
                Descriptor source = new Descriptor(data);
                ReadableOperation readable = owner.createReadable(source);
                ReadOperation read = reader.beginRead(readable.metadata(), target);
                java.util.concurrent.locks.LockSupport.parkNanos(random.nextLong(3_000_000));
                readable.close(); // returns only once no peer copies from the buffer any more
                // A delivery racing the close may still be releasing the buffer on the server thread: its end
                // (completion) comes after the release.
                readable.completion().handle((ok, error) -> null).get(30, TimeUnit.SECONDS);
                source.close(); // so that freeing it here is safe
                try {
                    read.waitForCompletion(WAIT);
                    assertThat(target.toByteArray()).as("iteration %d", i).isEqualTo(data);
                } catch (TransferException e) {
                    assertThat(read.status()).as("iteration %d", i).isEqualTo(OperationStatus.ERRORED);
                }
                if (DIRECT.equals(read.transferPath())) {
                    direct++;
                }
            }
        }
        assertThat(direct).as("reads that took the direct path").isPositive();
        assertThat(owner.registeredBytes()).isZero();
        assertThat(owner.inFlightOperations()).isZero();
        assertThat(reader.registeredBytes()).isZero();
        assertThat(reader.inFlightOperations()).isZero();
    }

    private static boolean canUnsharePidNamespace() {
        try {
            Process process = new ProcessBuilder("unshare", "--pid", "--fork", "true").redirectErrorStream(true).start();
            return process.waitFor(10, TimeUnit.SECONDS) && process.exitValue() == 0;
        } catch (Exception e) {
            return false;
        }
    }
}
