package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.nixlconnect.transport.embedded.EmbeddedSettings;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Two hosts: the peer JVM runs in a network namespace of its own, reachable only over a veth link, and binds
 * its server to that link's address — so the bytes cross a real network interface, not loopback. Needs root
 * and iproute2 (CI has both); skipped with the reason otherwise.
 */
@Tag(TestTags.TWO_HOST)
@Tag(TestTags.CROSS_PROCESS)
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class TwoHostTransferTest {

    private static final long ID = ProcessHandle.current().pid();
    private static final String NAMESPACE = "nxc-test-" + ID;
    private static final String HOST_LINK = "nxch" + (ID % 100000);
    private static final String PEER_LINK = "nxcp" + (ID % 100000);
    private static final String SUBNET = "10.77." + (ID % 250) + ".";
    private static final String HOST_ADDRESS = SUBNET + "1";
    private static final String PEER_ADDRESS = SUBNET + "2";

    private static PeerLines peer;

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
        assumeTrue(failure == null, () -> "cannot create a network namespace host (needs root and iproute2): " + failure);
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        peer = PeerLines.start(new ProcessBuilder("ip", "netns", "exec", NAMESPACE, java, "-Xmx256m",
                "-Dpeer.bind=" + PEER_ADDRESS, "-cp", System.getProperty("java.class.path"), PeerProcess.class.getName()),
                "netns-peer");
        assertThat(next("READY")).startsWith("READY");
    }

    @AfterAll
    static void removeTheSecondHost() throws Exception {
        if (peer != null) {
            peer.close();
        }
        sh("ip netns delete " + NAMESPACE); // removes the veth pair with it
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

    private static String next(String prefix) throws InterruptedException {
        return peer.next(prefix);
    }

    private static Connector host() {
        return new Connector(ConnectorOptions.builder().workerId("host").transports(EmbeddedSettings.defaults().withBindAddress(HOST_ADDRESS)).build());
    }

    @Test
    void readAndWriteCrossARealNetworkInterface() throws Exception {
        int size = 64 << 20;
        try (Connector connector = host(); Descriptor target = Descriptor.allocate(size)) {
            peer.send("readable " + size + " 99");
            RdmaMetadata readable = RdmaMetadata.fromJson(next("META ").substring(5));
            connector.beginRead(readable, target).waitForCompletion(Duration.ofSeconds(60));
            assertThat(next("DONE ")).isEqualTo("DONE " + readable.notificationKey() + " DONE");
            assertThat(target.toByteArray()).isEqualTo(PeerProcess.data(99, size));

            byte[] data = TestData.random(size);
            target.asByteBuffer().put(data);
            peer.send("writable " + size);
            RdmaMetadata writable = RdmaMetadata.fromJson(next("META ").substring(5));
            connector.beginWrite(target, writable).waitForCompletion(Duration.ofSeconds(60));
            assertThat(next("WRITTEN ")).isEqualTo("WRITTEN " + writable.notificationKey() + " DONE " + PeerProcess.crc(data));
            assertThat(connector.transportStatus().endpoint()).startsWith(HOST_ADDRESS + ":");
        }
    }
}
