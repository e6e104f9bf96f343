package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.nixlconnect.transport.nixl.NixlSettings;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 32 item 2, across JVMs: a consumer reading round-robin from more NIXL peers than the old hard-coded cache of
 * 64 opens no socket per operation, on either end; peers that leave take their sockets with them and are dropped.
 * Before, each operation evicted the least recently loaded peer and reloaded the next: one more UCX socket per
 * operation on the consumer and on the producer read from (+1 each per operation here), until file descriptors ran
 * out. The producers are child JVMs, each with several connectors (one NIXL agent each), talking UCX over TCP.
 */
@Tag(TestTags.CROSS_PROCESS)
@Tag(TestTags.NIXL)
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class NixlFleetSocketsTest {

    private static final String LIBRARY_DIR = System.getenv("NIXL_LIBRARY_DIR");
    private static final int SIZE = 4096;
    /** Sockets the measured span may add on one end: none per operation (UCX's own come and go). */
    private static final int SLACK = 10;

    @Test
    void readingRoundRobinFromMorePeersThanTheOldCacheOpensNoSocketPerOperation() throws Exception {
        assumeNixl();
        int jvms = 2;
        int perJvm = 33; // 66 peers: more than the 64 loaded before
        int rounds = 4;
        List<PeerLines> producers = new ArrayList<>();
        try (Connector consumer = consumer(NixlSettings.defaults().withLibraryDir(Path.of(LIBRARY_DIR)))) {
            List<List<String>> published = new ArrayList<>(); // per producer JVM: rounds x perJvm metadata, in order
            for (int j = 0; j < jvms; j++) {
                PeerLines producer = PeerLines.startJvmOverUcxTcp(NixlFleetSocketsTest.class, "producers",
                        Integer.toString(perJvm), Integer.toString(rounds));
                producers.add(producer);
            }
            for (PeerLines producer : producers) {
                List<String> lines = new ArrayList<>();
                for (int i = 0; i < perJvm * rounds; i++) {
                    lines.add(producer.next("META ").substring(5));
                }
                published.add(lines);
            }
            try (Descriptor target = Descriptor.allocate(SIZE)) {
                readRound(consumer, published, 0, perJvm, target); // every peer loaded once
                long consumerBefore = sockets(ProcessHandle.current().pid());
                List<Long> producersBefore = new ArrayList<>();
                for (PeerLines producer : producers) {
                    producersBefore.add(sockets(producer.process().pid()));
                }
                for (int round = 1; round < rounds; round++) {
                    readRound(consumer, published, round, perJvm, target);
                }
                int operations = (rounds - 1) * perJvm * jvms;
                assertThat(sockets(ProcessHandle.current().pid()) - consumerBefore)
                        .as("consumer sockets opened over %d operations round-robin over %d peers", operations,
                                perJvm * jvms)
                        .isLessThanOrEqualTo(SLACK);
                for (int j = 0; j < jvms; j++) {
                    assertThat(sockets(producers.get(j).process().pid()) - producersBefore.get(j))
                            .as("producer JVM %d's sockets opened over those operations", j)
                            .isLessThanOrEqualTo(SLACK);
                }
                PeerStatistics statistics = consumer.peerStatistics();
                assertThat(statistics.cachedPeers()).isEqualTo(perJvm * jvms);
                assertThat(statistics.evictions()).isZero();
            }
        } finally {
            for (PeerLines producer : producers) {
                producer.close();
            }
        }
    }

    @Test
    void peersThatLeaveTakeTheirSocketsAndAreDroppedOnceIdle() throws Exception {
        assumeNixl();
        int peers = 8;
        try (Connector consumer = consumer(NixlSettings.defaults().withLibraryDir(Path.of(LIBRARY_DIR))
                .withPeerIdleLimit(Duration.ofSeconds(1)));
             Descriptor target = Descriptor.allocate(SIZE)) {
            consumer.createReadable(target).close(); // the consumer's agent exists before counting
            long consumerBefore = sockets(ProcessHandle.current().pid());
            try (PeerLines producer = PeerLines.startJvmOverUcxTcp(NixlFleetSocketsTest.class, "producers",
                    Integer.toString(peers), "1")) {
                List<List<String>> published = new ArrayList<>();
                List<String> lines = new ArrayList<>();
                for (int i = 0; i < peers; i++) {
                    lines.add(producer.next("META ").substring(5));
                }
                published.add(lines);
                readRound(consumer, published, 0, peers, target);
                assertThat(sockets(ProcessHandle.current().pid())).as("connected to the peers")
                        .isGreaterThan(consumerBefore);
            } // the producer JVM exits: its peers leave
            await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
                PeerStatistics statistics = consumer.peerStatistics();
                assertThat(statistics.cachedPeers()).as("peers still loaded").isZero();
                assertThat(statistics.idleConnectionsClosed() + statistics.departedPeersClosed()).isEqualTo(peers);
                assertThat(sockets(ProcessHandle.current().pid()) - consumerBefore).as("consumer sockets left behind")
                        .isLessThanOrEqualTo(0);
            });
        }
    }

    private static void assumeNixl() {
        assumeTrue(LIBRARY_DIR != null && !LIBRARY_DIR.isBlank(),
                "NIXL_LIBRARY_DIR is not set: run `eval \"$(.ci/nixl-setup.sh)\"` to test against a real NIXL");
    }

    private static Connector consumer(NixlSettings settings) {
        return new Connector(ConnectorOptions.builder().workerId("fleet-consumer").transports(settings)
                .operationTimeout(Duration.ofSeconds(60)).build());
    }

    /** Reads, in order, round {@code round}'s readable of each peer of each producer JVM, checking the bytes. */
    private static void readRound(Connector consumer, List<List<String>> published, int round, int perJvm,
            Descriptor target) {
        for (int i = 0; i < perJvm; i++) {
            for (int j = 0; j < published.size(); j++) {
                RdmaMetadata metadata = RdmaMetadata.fromJson(published.get(j).get(round * perJvm + i));
                consumer.read(metadata, target);
                assertThat(target.toByteArray()).as("round %d, peer %d of JVM %d", round, i, j)
                        .isEqualTo(PeerProcess.data(seed(round, i), SIZE));
            }
        }
    }

    private static long seed(int round, int peer) {
        return round * 1000L + peer;
    }

    /** Sockets process {@code pid} holds open now (its file descriptors that are sockets). */
    static long sockets(long pid) throws IOException {
        try (Stream<Path> fds = Files.list(Path.of("/proc", Long.toString(pid), "fd"))) {
            return fds.filter(fd -> {
                try {
                    return Files.readSymbolicLink(fd).toString().startsWith("socket:");
                } catch (IOException e) {
                    return false; // closed while listed
                }
            }).count();
        }
    }

    /**
     * The producers' JVM: {@code producers PEERS ROUNDS} opens PEERS NIXL connectors and publishes ROUNDS readables
     * on each ({@code META json} lines, round by round, peer by peer), then serves them until stdin closes or says
     * {@code exit}.
     */
    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        int peers = Integer.parseInt(args[1]);
        int rounds = Integer.parseInt(args[2]);
        List<Connector> connectors = new ArrayList<>();
        List<Descriptor> owned = new ArrayList<>();
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            String prefix = "fleet-" + ProcessHandle.current().pid() + "-";
            for (int i = 0; i < peers; i++) {
                // No warm-up: what is measured is sockets, and 33 agents start within the harness's minute even on
                // a machine loaded 70 deep.
                connectors.add(new Connector(ConnectorOptions.builder().workerId(prefix + i)
                        .transports(NixlSettings.defaults().withLibraryDir(Path.of(LIBRARY_DIR)).withWarmUp(false))
                        .operationTimeout(Duration.ofMinutes(5)).build()));
            }
            StringBuilder lines = new StringBuilder();
            for (int round = 0; round < rounds; round++) {
                for (int i = 0; i < peers; i++) {
                    Descriptor descriptor = new Descriptor(PeerProcess.data(seed(round, i), SIZE));
                    owned.add(descriptor);
                    lines.append("META ").append(connectors.get(i).createReadable(descriptor).metadata().toJson())
                            .append('\n');
                }
            }
            out.print(lines);
            out.flush();
            String line;
            while ((line = in.readLine()) != null && !line.equals("exit")) {
                // serving until told to exit
            }
        } finally {
            for (Connector connector : connectors) {
                connector.close();
            }
            for (Descriptor descriptor : owned) {
                try {
                    descriptor.close();
                } catch (IllegalStateException ignored) {
                    // still in use while exiting: the process ends anyway
                }
            }
        }
    }
}
