package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nixlconnect.transport.embedded.EmbeddedSettings;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Transfers between this JVM and a {@link PeerProcess} over real sockets. */
@Tag(TestTags.CROSS_PROCESS)
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class CrossProcessTransferTest {

    private static final Duration WAIT = Duration.ofSeconds(60);

    private PeerLines peer;
    private Connector connector;

    @BeforeEach
    void startPeer() throws Exception {
        peer = PeerLines.start(new ProcessBuilder(ChildJvm.command("-Xmx256m", "-cp", System.getProperty("java.class.path"),
                PeerProcess.class.getName())), "peer");
        assertThat(next("READY")).startsWith("READY");
        connector = new Connector(ConnectorOptions.builder().workerId("tester").transports(EmbeddedSettings.defaults())
                .operationTimeout(Duration.ofSeconds(20)).build());
    }

    @AfterEach
    void stopPeer() throws Exception {
        if (connector != null) {
            connector.close();
        }
        peer.close();
    }

    private String next(String prefix) throws InterruptedException {
        return peer.next(prefix);
    }

    private RdmaMetadata publish(String command) throws InterruptedException {
        peer.send(command);
        return RdmaMetadata.fromJson(next("META ").substring(5));
    }

    @Test
    void readsAcrossProcessesAreByteExact() throws Exception {
        for (int size : new int[] {1, 4096, 64 << 20}) {
            long seed = System.nanoTime();
            RdmaMetadata metadata = publish("readable " + size + " " + seed);
            try (Descriptor target = Descriptor.allocate(size)) {
                connector.beginRead(metadata, target).waitForCompletion(WAIT);
                assertThat(next("DONE ")).isEqualTo("DONE " + metadata.notificationKey() + " DONE");
                assertThat(target.toByteArray()).as("%d bytes", size).isEqualTo(PeerProcess.data(seed, size));
            }
        }
    }

    @Test
    void writesAcrossProcessesAreByteExact() throws Exception {
        for (int size : new int[] {1, 4096, 64 << 20}) {
            byte[] data = TestData.random(size);
            RdmaMetadata metadata = publish("writable " + size);
            try (Descriptor source = new Descriptor(data)) {
                connector.beginWrite(source, metadata).waitForCompletion(WAIT);
            }
            assertThat(next("WRITTEN ")).isEqualTo("WRITTEN " + metadata.notificationKey() + " DONE " + PeerProcess.crc(data));
        }
    }

    @Test
    void multiDescriptorReadAcrossProcesses() throws Exception {
        int count = 16;
        RdmaMetadata metadata = publish("multi " + count + " 8192 42");
        assertThat(metadata.descriptors()).hasSize(count);
        // One operation gathers the peer's 16 buffers into 16 local ones.
        List<Descriptor> targets = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            targets.add(Descriptor.allocate(8192));
        }
        connector.beginRead(metadata, targets).waitForCompletion(WAIT);
        assertThat(next("DONE ")).isEqualTo("DONE " + metadata.notificationKey() + " DONE");
        for (int i = 0; i < count; i++) {
            assertThat(targets.get(i).toByteArray()).as("descriptor %d", i).isEqualTo(PeerProcess.data(42 + i, 8192));
            targets.get(i).close();
        }
    }

    @Test
    void thousandConcurrentOperationsCompleteAndReleaseEverything() throws Exception {
        int count = 1000;
        int size = 16 * 1024;
        peer.send("many " + count + " " + size + " 7");
        List<RdmaMetadata> published = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            published.add(RdmaMetadata.fromJson(next("META ").substring(5)));
        }
        List<Descriptor> targets = new ArrayList<>();
        List<CompletableFuture<Void>> reads = new ArrayList<>();
        for (RdmaMetadata metadata : published) {
            Descriptor target = Descriptor.allocate(size);
            targets.add(target);
            reads.add(connector.beginRead(metadata, target).completion());
        }
        CompletableFuture.allOf(reads.toArray(CompletableFuture[]::new)).get(120, TimeUnit.SECONDS);
        for (int i = 0; i < count; i++) {
            assertThat(targets.get(i).toByteArray()).as("operation %d", i).isEqualTo(PeerProcess.data(7 + i, size));
            targets.get(i).close();
        }
        assertThat(connector.registeredBytes()).isZero();
        assertThat(connector.inFlightOperations()).isZero();
        peer.send("stats");
        assertThat(next("STATS ")).isEqualTo("STATS 0 0");
    }

    @Test
    void peerKilledMidTransferEndsErroredWithinTheTimeout() throws Exception {
        int size = 1 << 30;
        RdmaMetadata metadata = publish("blank " + size);
        try (Descriptor target = Descriptor.allocate(size)) {
            ReadOperation read = connector.beginRead(metadata, target);
            peer.process().destroyForcibly();
            long start = System.nanoTime();
            assertThatThrownBy(() -> read.waitForCompletion(WAIT)).isInstanceOf(TransferException.class);
            assertThat(read.status()).isIn(OperationStatus.ERRORED);
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThanOrEqualTo(Duration.ofSeconds(21));
        }
        assertThat(connector.registeredBytes()).isZero();
    }
}
