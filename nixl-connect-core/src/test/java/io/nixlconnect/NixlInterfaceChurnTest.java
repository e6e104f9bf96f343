package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.nixlconnect.transport.nixl.NixlSettings;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * NIXL agents on this host keep working while a network interface comes and goes — what the two-host test (a
 * veth pair in the root namespace) of any build running beside this one does. With UCX free to use every
 * interface ({@code UCX_NET_DEVICES=all}, its default), an agent created while such an interface is up puts it in
 * its address, and once it is gone UCX fails to create endpoints ("Destination is unreachable"): the UCX backend
 * of a new agent, the load of a peer's metadata, or the transfer fails. That was the flake of
 * {@code NixlTransferContractTest.agentMetadataWithAnOutOfRangeMemoryTypeIsRefusedBeforeNixl[3]} under load (3 of
 * 40 rounds failed here with an interface churning beside them). The NIXL tests' environment
 * ({@code .ci/nixl-setup.sh}) pins UCX to loopback; this test fails when that pin is lost.
 */
@Tag(TestTags.NIXL)
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class NixlInterfaceChurnTest {

    private static final String LIBRARY_DIR = System.getenv("NIXL_LIBRARY_DIR");
    private static final long ID = ProcessHandle.current().pid();
    private static final String LINK = "nxcc" + (ID % 100000);
    private static final String OTHER_END = "nxcd" + (ID % 100000);
    private static final String ADDRESS = "10.78." + (ID % 250) + ".1/30";
    private static final int ROUNDS = 40;

    @Test
    void agentsLoadsAndTransfersHoldWhileAnInterfaceComesAndGoes() throws Exception {
        assumeTrue(LIBRARY_DIR != null && !LIBRARY_DIR.isBlank(),
                "NIXL_LIBRARY_DIR is not set: run `eval \"$(.ci/nixl-setup.sh)\"` to test against a real NIXL");
        assumeTrue(sh("ip link add " + LINK + " type veth peer name " + OTHER_END) == null,
                "cannot create a network interface (needs root and iproute2)");
        sh("ip link delete " + LINK);
        AtomicBoolean churning = new AtomicBoolean(true);
        AtomicInteger cycles = new AtomicInteger();
        Thread churn = new Thread(() -> {
            try {
                while (churning.get()) {
                    sh("ip link add " + LINK + " type veth peer name " + OTHER_END, "ip addr add " + ADDRESS + " dev " + LINK,
                            "ip link set " + OTHER_END + " up", "ip link set " + LINK + " up");
                    TimeUnit.MILLISECONDS.sleep(60);
                    sh("ip link delete " + LINK); // removes both ends
                    cycles.incrementAndGet();
                    TimeUnit.MILLISECONDS.sleep(20);
                }
            } catch (Exception e) {
                Thread.currentThread().interrupt();
            }
        }, "interface-churn");
        List<String> failures = new ArrayList<>();
        churn.start();
        try {
            for (int round = 0; round < ROUNDS; round++) {
                try {
                    readOnce(round);
                } catch (RuntimeException e) {
                    failures.add("round " + round + ": " + e);
                }
            }
        } finally {
            churning.set(false);
            churn.join(TimeUnit.SECONDS.toMillis(30));
            sh("ip link delete " + LINK);
        }
        assertThat(cycles.get()).as("the interface came and went while the agents worked").isPositive();
        assertThat(failures).as("NIXL operations that failed while an interface came and went (UCX_NET_DEVICES=%s; "
                + ".ci/nixl-setup.sh pins it to lo)", System.getenv("UCX_NET_DEVICES")).isEmpty();
    }

    /** What every NIXL test does: two fresh agents, a peer's metadata loaded, one READ. */
    private static void readOnce(int round) {
        NixlSettings nixl = NixlSettings.defaults().withLibraryDir(Path.of(LIBRARY_DIR));
        byte[] data = TestData.random(4096);
        try (Connector producer = new Connector(ConnectorOptions.builder().workerId("churn-producer").transports(nixl).build());
             Connector consumer = new Connector(ConnectorOptions.builder().workerId("churn-consumer").transports(nixl).build());
             Descriptor source = new Descriptor(data); Descriptor target = Descriptor.allocate(4096)) {
            ReadableOperation readable = producer.createReadable(source);
            consumer.beginRead(readable.metadata(), target).waitForCompletion(Duration.ofSeconds(30));
            readable.waitForCompletion(Duration.ofSeconds(30));
            assertThat(target.toByteArray()).as("round %d", round).isEqualTo(data);
        }
    }

    /** Runs commands in order; returns the first failure's output, or null. */
    private static String sh(String... commands) throws IOException, InterruptedException {
        for (String command : commands) {
            Process process = new ProcessBuilder(List.of("sh", "-c", command)).redirectErrorStream(true).start();
            String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            if (process.waitFor() != 0) {
                return command + ": " + output;
            }
        }
        return null;
    }
}
