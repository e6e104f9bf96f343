package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.nixlconnect.transport.embedded.EmbeddedSettings;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The embedded transport in a fleet, across JVMs: producers that come and go leave no connection behind on the
 * consumer, and a process out of file descriptors says so and works again once they are free, consumer and producer
 * alike. The outcomes are counts, which machine load cannot move; waits are bounded polls of them.
 */
@Tag(TestTags.CROSS_PROCESS)
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class EmbeddedFleetTest {

    private static final int PRODUCERS = 100;
    private static final int SIZE = 4096;
    private static final Duration WAIT = Duration.ofSeconds(30);
    /** The file descriptors of the child JVMs that run out of them: enough to start, few to use up. */
    private static final int MAX_FILES = 256;

    private final List<AutoCloseable> closing = new ArrayList<>();

    @AfterEach
    void close() throws Exception {
        for (int i = closing.size() - 1; i >= 0; i--) {
            closing.get(i).close();
        }
    }

    private <T extends AutoCloseable> T closeLater(T closeable) {
        closing.add(closeable);
        return closeable;
    }

    private PeerLines peer(PeerLines started) throws InterruptedException {
        closeLater(started);
        assertThat(started.next("READY")).startsWith("READY");
        return started;
    }

    private static PeerLines plainJvm() throws Exception {
        return PeerLines.start(new ProcessBuilder(ChildJvm.command("-Xmx256m", "-cp",
                System.getProperty("java.class.path"), PeerProcess.class.getName())), "producers");
    }

    @Test
    void aConsumerOfManyProducersThatLeaveKeepsNoConnectionToThem() throws Exception {
        PeerLines producers = peer(plainJvm());
        Connector consumer = closeLater(new Connector(ConnectorOptions.builder().workerId("fleet-consumer")
                .transports(EmbeddedSettings.defaults()).build()));
        readFromAProducerThatLeaves(producers, consumer, 0);
        await().atMost(WAIT).until(() -> consumer.peerStatistics().openConnections() == 0);
        long idleSockets = PeerProcess.socketFds();

        for (int i = 1; i <= PRODUCERS; i++) {
            readFromAProducerThatLeaves(producers, consumer, i);
        }

        // Each producer's connection is closed within a check of the idle ones after its producer left.
        await().atMost(WAIT).until(() -> consumer.peerStatistics().openConnections() == 0);
        PeerStatistics peers = consumer.peerStatistics();
        assertThat(peers.departedPeersClosed()).as("one connection per departed producer, each closed")
                .isEqualTo(PRODUCERS + 1);
        assertThat(peers.idleConnectionsClosed()).isZero();
        assertThat(peers.cachedPeers()).isLessThanOrEqualTo(EmbeddedSettings.DEFAULT_MAX_CACHED_PEERS);
        assertThat(PeerProcess.socketFds()).as("this JVM's sockets, against %d before the %d producers", idleSockets,
                PRODUCERS).isLessThanOrEqualTo(idleSockets + 2);
    }

    private static void readFromAProducerThatLeaves(PeerLines producers, Connector consumer, int i)
            throws InterruptedException {
        producers.send("producer " + SIZE + " " + i);
        RdmaMetadata metadata = RdmaMetadata.fromJson(producers.next("META ").substring(5));
        try (Descriptor target = Descriptor.allocate(SIZE)) {
            consumer.read(metadata, target);
            assertThat(target.toByteArray()).as("producer %d", i).isEqualTo(PeerProcess.data(i, SIZE));
        }
        assertThat(producers.next("GONE ")).endsWith(" " + OperationStatus.COMPLETE);
    }

    @Test
    void aConsumerOutOfFileDescriptorsSaysSoAndReadsAgainOnceTheyAreFree() throws Exception {
        PeerLines reader = peer(PeerLines.startJvmWithFileLimit(MAX_FILES, PeerProcess.class, "fd-limited reader"));
        Connector first = closeLater(producer("first"));
        Connector second = closeLater(producer("second"));
        assertThat(tryRead(reader, first, 1)).startsWith("READ ");

        assertThat(reader.sendAndNext("hoard", "HOARDED ")).containsIgnoringCase("too many open files");
        // A new peer needs a new socket: there is none to be had.
        String failed = tryRead(reader, second, 2);
        assertThat(failed).startsWith("FAILED ").contains("ran out of file descriptors")
                .containsPattern("\\d+ open, limit " + MAX_FILES);
        assertThat(reader.sendAndNext("free", "FREED ")).startsWith("FREED ");

        String read = tryRead(reader, second, 3);
        assertThat(read).as("the same connector, without a restart").startsWith("READ ")
                .contains(" " + OperationStatus.COMPLETE + " ").endsWith(" " + PeerProcess.crc(PeerProcess.data(3, SIZE)));
        assertThat(tryRead(reader, first, 4)).startsWith("READ ");
        String[] peers = reader.sendAndNext("peers", "PEERS ").split(" ");
        assertThat(Integer.parseInt(peers[2])).as("open connections: one per producer").isEqualTo(2);
    }

    private static Connector producer(String name) {
        return new Connector(ConnectorOptions.builder().workerId(name).transports(EmbeddedSettings.defaults())
                .passiveTimeout(Duration.ofSeconds(30)).build());
    }

    /** The reader's answer to reading a readable of {@code producer} with data from {@code seed}. */
    private static String tryRead(PeerLines reader, Connector producer, long seed) throws InterruptedException {
        try (Descriptor source = new Descriptor(PeerProcess.data(seed, SIZE));
             ReadableOperation readable = producer.createReadable(source)) {
            reader.send("tryread " + readable.metadata().toJson());
            while (true) {
                String line = reader.nextOrError(""); // any line: the reader's logging goes to the same stdout
                if (line.startsWith("READ ") || line.startsWith("FAILED ")) {
                    return line;
                }
            }
        }
    }

    @Test
    void aProducerOutOfFileDescriptorsSaysSoOnceAndServesAgainOnceTheyAreFree() throws Exception {
        PeerLines producer = peer(PeerLines.startJvmWithFileLimit(MAX_FILES, PeerProcess.class, "fd-limited producer"));
        Connector consumer = closeLater(new Connector(ConnectorOptions.builder().workerId("consumer")
                .transports(EmbeddedSettings.defaults()).build()));
        // The producer has served a peer before (as a producer in a fleet has), then a new one comes.
        Connector earlier = closeLater(new Connector(ConnectorOptions.builder().workerId("earlier-consumer")
                .transports(EmbeddedSettings.defaults()).build()));
        producer.send("readable " + SIZE + " 6");
        try (Descriptor target = Descriptor.allocate(SIZE)) {
            earlier.read(RdmaMetadata.fromJson(producer.next("META ").substring(5)), target);
        }
        producer.send("readable " + SIZE + " 7");
        RdmaMetadata metadata = RdmaMetadata.fromJson(producer.next("META ").substring(5));
        assertThat(producer.sendAndNext("hoard", "HOARDED ")).containsIgnoringCase("too many open files");

        try (Descriptor target = Descriptor.allocate(SIZE)) {
            ReadOperation read = closeLater(consumer.beginRead(metadata, target));
            // The connection waits in the producer's listen backlog; its acceptor says once what ran out.
            List<String> lines = new ArrayList<>();
            await().atMost(WAIT).until(() -> {
                lines.addAll(producer.takeLines());
                return lines.stream().anyMatch(line -> line.contains("cannot accept peers' connections"));
            });
            producer.send("free");
            read.waitForCompletion(WAIT);
            assertThat(target.toByteArray()).isEqualTo(PeerProcess.data(7, SIZE));
            lines.addAll(producer.takeLines());
            List<String> named = lines.stream().filter(line -> line.contains("cannot accept")).toList();
            assertThat(named).as("logged once, not once per failed accept").hasSize(1);
            assertThat(named.get(0)).contains("ran out of file descriptors").contains("limit " + MAX_FILES);
            assertThat(lines).noneMatch(line -> line.contains("accept failed"));
        }
    }
}
