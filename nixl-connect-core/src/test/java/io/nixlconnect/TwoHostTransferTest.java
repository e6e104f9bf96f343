package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.nixlconnect.transport.embedded.EmbeddedSettings;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Two hosts: the peer runs in a network namespace of its own, reachable only over a veth link — so the bytes
 * cross a real network interface, not loopback or shared memory. Over the embedded transport (this JVM against
 * a peer JVM), and over NIXL: UCX restricted to TCP on the veth ends ({@code UCX_TLS=tcp},
 * {@code UCX_NET_DEVICES}), between two Java peers and between a Java peer and a Python NIXL peer, 256 MiB
 * READ and WRITE in both directions, byte-exact, with the link's byte counters showing the traffic.
 *
 * <p>Needs root and iproute2, and NIXL ({@code .ci/nixl-setup.sh}) for the NIXL cases. Skipped with the reason
 * outside CI; in CI (CI=true), where all of that is provided, a missing piece fails the test instead.
 */
@Tag(TestTags.TWO_HOST)
@Tag(TestTags.CROSS_PROCESS)
@Timeout(value = 600, unit = TimeUnit.SECONDS)
class TwoHostTransferTest {

    private static final long ID = ProcessHandle.current().pid();
    private static final String NAMESPACE = "nxc-test-" + ID;
    private static final String HOST_LINK = "nxch" + (ID % 100000);
    private static final String PEER_LINK = "nxcp" + (ID % 100000);
    private static final String SUBNET = "10.77." + (ID % 250) + ".";
    private static final String HOST_ADDRESS = SUBNET + "1";
    private static final String PEER_ADDRESS = SUBNET + "2";
    private static final int NIXL_SIZE = 256 << 20;
    private static final String LIBRARY_DIR = System.getenv("NIXL_LIBRARY_DIR");
    private static final String PYTHON_PATH = System.getenv("NIXL_PYTHON_PATH");
    private static final boolean CI = "true".equals(System.getenv("CI"));

    private static PeerLines peer;
    private final List<PeerLines> nixlPeers = new ArrayList<>();

    /** Skips outside CI; fails in CI, which must run every two-host case. */
    private static void require(boolean condition, String reason) {
        if (!condition && CI) {
            fail("CI must run the two-host test, but " + reason);
        }
        assumeTrue(condition, reason);
    }

    @BeforeAll
    static void createTheSecondHost() throws Exception {
        String failure = sh("ip netns add " + NAMESPACE,
                "ip link add " + HOST_LINK + " type veth peer name " + PEER_LINK,
                "ip link set " + PEER_LINK + " netns " + NAMESPACE,
                "ip addr add " + HOST_ADDRESS + "/30 dev " + HOST_LINK,
                "ip link set " + HOST_LINK + " up",
                "ip netns exec " + NAMESPACE + " ip addr add " + PEER_ADDRESS + "/30 dev " + PEER_LINK,
                "ip netns exec " + NAMESPACE + " ip link set " + PEER_LINK + " up",
                "ip netns exec " + NAMESPACE + " ip link set lo up");
        if (failure != null) {
            removeTheSecondHost();
        }
        require(failure == null, "cannot create a network namespace host (needs root and iproute2): " + failure);
        peer = PeerLines.start(javaPeer(true, Map.of(), "-Dpeer.bind=" + PEER_ADDRESS), "netns-peer");
        assertThat(peer.next("READY")).startsWith("READY");
    }

    @AfterAll
    static void removeTheSecondHost() throws Exception {
        if (peer != null) {
            peer.close();
        }
        sh("ip netns delete " + NAMESPACE); // removes the veth pair with it
    }

    @AfterEach
    void stopNixlPeers() throws Exception {
        for (PeerLines nixlPeer : nixlPeers) {
            nixlPeer.close();
        }
    }

    /** Runs commands in order; returns the first failure's output, or null. */
    private static String sh(String... commands) throws Exception {
        for (String command : commands) {
            Process process;
            try {
                process = new ProcessBuilder(List.of("sh", "-c", command)).redirectErrorStream(true).start();
            } catch (IOException e) {
                return command + ": " + e.getMessage();
            }
            String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            if (process.waitFor() != 0) {
                return command + ": " + output;
            }
        }
        return null;
    }

    /** A {@link PeerProcess} on this host or in the namespace, with extra environment and JVM options. */
    private static ProcessBuilder javaPeer(boolean inNamespace, Map<String, String> environment, String... options) {
        List<String> command = new ArrayList<>();
        if (inNamespace) {
            command.addAll(List.of("ip", "netns", "exec", NAMESPACE));
        }
        command.addAll(ChildJvm.command("-Xmx1g"));
        command.addAll(List.of(options));
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), PeerProcess.class.getName()));
        ProcessBuilder builder = new ProcessBuilder(command);
        builder.environment().putAll(environment);
        return builder;
    }

    /**
     * What UCX needs to reach the other host over the veth link only: TCP (its shared-memory transports would
     * otherwise carry the bytes, both namespaces sharing one kernel) on that side's veth end.
     */
    private static Map<String, String> ucxOver(String link) {
        return Map.of("UCX_TLS", "tcp", "UCX_NET_DEVICES", link);
    }

    private PeerLines nixlJavaPeer(boolean inNamespace) throws Exception {
        require(LIBRARY_DIR != null && !LIBRARY_DIR.isBlank(),
                "NIXL_LIBRARY_DIR is not set: run `eval \"$(.ci/nixl-setup.sh)\"` for the NIXL two-host cases");
        PeerLines started = PeerLines.start(javaPeer(inNamespace, ucxOver(inNamespace ? PEER_LINK : HOST_LINK),
                "-Dpeer.backend=nixl", "-Dpeer.nixl=" + LIBRARY_DIR), inNamespace ? "netns-nixl-peer" : "host-nixl-peer");
        nixlPeers.add(started);
        assertThat(started.next("READY")).startsWith("READY");
        return started;
    }

    private PeerLines nixlPythonPeerInTheNamespace() throws Exception {
        require(PYTHON_PATH != null && !PYTHON_PATH.isBlank(),
                "NIXL_PYTHON_PATH is not set: run `eval \"$(.ci/nixl-setup.sh)\"` for the Python two-host case");
        Path script = null;
        for (Path dir = Path.of("").toAbsolutePath(); dir != null && script == null; dir = dir.getParent()) {
            Path candidate = dir.resolve("interop").resolve("python_peer.py");
            script = Files.isRegularFile(candidate) ? candidate : null;
        }
        assertThat(script).as("interop/python_peer.py above the working directory").isNotNull();
        ProcessBuilder builder = new ProcessBuilder("ip", "netns", "exec", NAMESPACE,
                System.getenv().getOrDefault("NIXL_PYTHON", "python3"), "-u", script.toString());
        builder.environment().putAll(ucxOver(PEER_LINK));
        builder.environment().put("PYTHONPATH", PYTHON_PATH);
        PeerLines started = PeerLines.start(builder, "netns-python-peer");
        nixlPeers.add(started);
        assertThat(started.next("READY")).startsWith("READY python-peer-");
        return started;
    }

    private static long linkBytes() throws IOException {
        Path statistics = Path.of("/sys/class/net", HOST_LINK, "statistics");
        return Long.parseLong(Files.readString(statistics.resolve("rx_bytes")).trim())
                + Long.parseLong(Files.readString(statistics.resolve("tx_bytes")).trim());
    }

    /** Same kernel, so a direct copy would work: kept on TCP, the bytes must cross the veth link. */
    private static Connector host() {
        return new Connector(ConnectorOptions.builder().workerId("host")
                .transports(EmbeddedSettings.defaults().withBindAddress(HOST_ADDRESS).withSameHostCopy(false)).build());
    }

    @Test
    void readAndWriteCrossARealNetworkInterface() throws Exception {
        int size = 64 << 20;
        try (Connector connector = host(); Descriptor target = Descriptor.allocate(size)) {
            peer.send("readable " + size + " 99");
            RdmaMetadata readable = RdmaMetadata.fromJson(peer.next("META ").substring(5));
            ReadOperation read = connector.beginRead(readable, target);
            read.waitForCompletion(Duration.ofSeconds(60));
            assertThat(read.transferPath()).isEqualTo("tcp");
            assertThat(peer.next("DONE ")).isEqualTo("DONE " + readable.notificationKey() + " DONE");
            assertThat(target.toByteArray()).isEqualTo(PeerProcess.data(99, size));

            byte[] data = TestData.random(size);
            target.asByteBuffer().put(data);
            peer.send("writable " + size);
            RdmaMetadata writable = RdmaMetadata.fromJson(peer.next("META ").substring(5));
            connector.beginWrite(target, writable).waitForCompletion(Duration.ofSeconds(60));
            assertThat(peer.next("WRITTEN ")).isEqualTo("WRITTEN " + writable.notificationKey() + " DONE " + PeerProcess.crc(data));
            assertThat(connector.transportStatus().endpoint()).startsWith(HOST_ADDRESS + ":");
        }
    }

    @Test
    @Tag(TestTags.NIXL)
    void nixlMovesBytesBetweenJavaPeersOnTwoHostsBothWays() throws Exception {
        PeerLines here = nixlJavaPeer(false);
        PeerLines there = nixlJavaPeer(true);
        long before = linkBytes();
        for (PeerLines[] pair : new PeerLines[][] {{here, there}, {there, here}}) {
            PeerLines active = pair[0];
            PeerLines passive = pair[1];
            long seed = active == here ? 5 : 6;

            passive.send("readable " + NIXL_SIZE + " " + seed);
            String readable = passive.next("META ").substring(5);
            String key = RdmaMetadata.fromJson(readable).notificationKey();
            active.send("read " + readable);
            assertThat(active.next("READ ")).isEqualTo("READ " + key + " DONE " + PeerProcess.crcOfData(seed, NIXL_SIZE));
            assertThat(passive.next("DONE ")).isEqualTo("DONE " + key + " DONE");

            passive.send("writable " + NIXL_SIZE);
            String writable = passive.next("META ").substring(5);
            key = RdmaMetadata.fromJson(writable).notificationKey();
            active.send("write " + NIXL_SIZE + " " + (seed + 10) + " " + writable);
            long crc = PeerProcess.crcOfData(seed + 10, NIXL_SIZE);
            assertThat(active.next("WROTE ")).isEqualTo("WROTE " + key + " DONE " + crc);
            assertThat(passive.next("WRITTEN ")).isEqualTo("WRITTEN " + key + " DONE " + crc);
        }
        assertThat(linkBytes() - before).as("bytes over the veth link").isGreaterThanOrEqualTo(4L * NIXL_SIZE);
    }

    @Test
    @Tag(TestTags.NIXL)
    @Tag(TestTags.PYTHON_INTEROP)
    void nixlMovesBytesBetweenJavaAndAPythonPeerOnTwoHostsBothWays() throws Exception {
        PeerLines java = nixlJavaPeer(false);
        PeerLines python = nixlPythonPeerInTheNamespace();
        long before = linkBytes();

        // Java reads what Python published
        python.send("readable " + NIXL_SIZE + " 11");
        long pythonCrc = Long.parseLong(python.next("DATA ").substring(5));
        String readable = python.next("META ").substring(5);
        String key = RdmaMetadata.fromJson(readable).notificationKey();
        java.send("read " + readable);
        assertThat(java.next("READ ")).isEqualTo("READ " + key + " DONE " + pythonCrc);
        assertThat(python.next("DONE ")).isEqualTo("DONE " + key);

        // Python reads what Java published
        java.send("readable " + NIXL_SIZE + " 12");
        readable = java.next("META ").substring(5);
        key = RdmaMetadata.fromJson(readable).notificationKey();
        python.send("read " + readable);
        assertThat(python.next("READ ")).isEqualTo("READ " + key + " DONE " + PeerProcess.crcOfData(12, NIXL_SIZE));
        assertThat(java.next("DONE ")).isEqualTo("DONE " + key + " DONE");

        // Java writes into Python
        python.send("writable " + NIXL_SIZE);
        String writable = python.next("META ").substring(5);
        key = RdmaMetadata.fromJson(writable).notificationKey();
        java.send("write " + NIXL_SIZE + " 13 " + writable);
        long crc = PeerProcess.crcOfData(13, NIXL_SIZE);
        assertThat(java.next("WROTE ")).isEqualTo("WROTE " + key + " DONE " + crc);
        assertThat(python.next("WRITTEN ")).isEqualTo("WRITTEN " + key + " " + crc);

        // Python writes into Java
        java.send("writable " + NIXL_SIZE);
        writable = java.next("META ").substring(5);
        key = RdmaMetadata.fromJson(writable).notificationKey();
        python.send("write " + NIXL_SIZE + " 14 " + writable);
        String wrote = python.next("WROTE ");
        assertThat(wrote).startsWith("WROTE " + key + " DONE ");
        assertThat(java.next("WRITTEN ")).isEqualTo("WRITTEN " + key + " DONE " + wrote.substring(wrote.lastIndexOf(' ') + 1));

        assertThat(linkBytes() - before).as("bytes over the veth link").isGreaterThanOrEqualTo(4L * NIXL_SIZE);
    }
}
