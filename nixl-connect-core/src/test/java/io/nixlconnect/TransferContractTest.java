package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.nixlconnect.transport.TransferAttributes;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The transfer contract every backend passes: two connectors in one JVM move bytes both ways, refuse bad
 * requests before touching memory, fail fast against dead peers, and release everything afterwards.
 * Subclasses say which backend to use.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
abstract class TransferContractTest {

    static final Duration WAIT = Duration.ofSeconds(30);

    Connector producer;
    Connector consumer;

    /** Options of the backend under test; {@code workerId} is set by the suite. */
    abstract ConnectorOptions.Builder options();

    @BeforeEach
    void startConnectors() {
        producer = new Connector(options().workerId("producer").build());
        consumer = new Connector(options().workerId("consumer").build());
    }

    @AfterEach
    void closeConnectors() {
        if (consumer != null) {
            consumer.close();
        }
        if (producer != null) {
            producer.close();
        }
    }

    @ParameterizedTest(name = "READ of {0} bytes")
    @ValueSource(ints = {1, 4096, 64 << 20})
    void readMovesTheBytes(int size) {
        byte[] data = TestData.random(size);
        try (Descriptor source = new Descriptor(data); Descriptor target = Descriptor.allocate(size)) {
            ReadableOperation readable = producer.createReadable(source);
            ReadOperation read = consumer.beginRead(RdmaMetadata.fromJson(readable.metadata().toJson()), target);
            read.waitForCompletion(WAIT);
            readable.waitForCompletion(WAIT);
            assertThat(read.status()).isEqualTo(OperationStatus.COMPLETE);
            assertThat(readable.status()).isEqualTo(OperationStatus.COMPLETE);
            assertThat(read.results()).containsExactly(target);
            assertThat(target.toByteArray()).isEqualTo(data);
        }
        assertNothingRegistered();
    }

    @ParameterizedTest(name = "WRITE of {0} bytes")
    @ValueSource(ints = {1, 4096, 64 << 20})
    void writeMovesTheBytes(int size) {
        byte[] data = TestData.random(size);
        try (Descriptor target = Descriptor.allocate(size); Descriptor source = new Descriptor(data)) {
            WritableOperation writable = producer.createWritable(target);
            WriteOperation write = consumer.beginWrite(source, RdmaMetadata.fromJson(writable.metadata().toJson()));
            write.waitForCompletion(WAIT);
            writable.waitForCompletion(WAIT);
            assertThat(write.status()).isEqualTo(OperationStatus.COMPLETE);
            assertThat(writable.status()).isEqualTo(OperationStatus.COMPLETE);
            assertThat(target.toByteArray()).isEqualTo(data);
        }
        assertNothingRegistered();
    }

    @ParameterizedTest(name = "blocking READ and WRITE of {0} bytes")
    @ValueSource(ints = {1, 4096, 64 << 10, 1 << 20})
    void blockingReadAndWriteReturnOnceTheBytesHaveLanded(int size) {
        byte[] data = TestData.random(size);
        try (Descriptor source = new Descriptor(data); Descriptor target = Descriptor.allocate(size)) {
            ReadableOperation readable = producer.createReadable(source);
            consumer.read(RdmaMetadata.fromJson(readable.metadata().toJson()), target);
            assertThat(target.toByteArray()).isEqualTo(data);
            readable.waitForCompletion(WAIT);
            assertThat(readable.status()).isEqualTo(OperationStatus.COMPLETE);
        }
        byte[] written = TestData.random(size);
        try (Descriptor target = Descriptor.allocate(size); Descriptor source = new Descriptor(written)) {
            WritableOperation writable = producer.createWritable(target);
            consumer.write(source, RdmaMetadata.fromJson(writable.metadata().toJson()));
            writable.waitForCompletion(WAIT);
            assertThat(target.toByteArray()).isEqualTo(written);
        }
        assertThat(consumer.inFlightOperations()).isZero();
        assertNothingRegistered();
    }

    @Test
    void peerStatisticsCountThePeerAndItsConnectionsAndNothingOnceClosed() {
        assertThat(consumer.peerStatistics()).isEqualTo(new PeerStatistics(0, 0, 0, 0, 0, 0));
        try (Descriptor source = new Descriptor(TestData.random(4096)); Descriptor target = Descriptor.allocate(4096)) {
            ReadableOperation readable = producer.createReadable(source);
            consumer.read(RdmaMetadata.fromJson(readable.metadata().toJson()), target);
            readable.waitForCompletion(WAIT);
        }
        PeerStatistics afterRead = consumer.peerStatistics();
        assertThat(afterRead.cachedPeers()).isEqualTo(consumer.remoteAgentCount()).isEqualTo(1);
        assertThat(afterRead.openConnections()).as("the consumer's connection to the producer").isPositive();
        assertThat(afterRead.evictions()).isZero();
        assertThat(afterRead.reconnects()).isZero();
        consumer.close();
        assertThat(consumer.peerStatistics()).isEqualTo(new PeerStatistics(0, 0, 0, 0, 0, 0));
    }

    @Test
    void blockingReadFromADeadPeerThrowsAndLeavesNothingBehind() {
        try (Descriptor source = Descriptor.allocate(1024); Descriptor target = Descriptor.allocate(1024)) {
            ReadableOperation readable = producer.createReadable(source);
            RdmaMetadata metadata = readable.metadata();
            producer.close();
            long start = System.nanoTime();
            assertThatThrownBy(() -> consumer.read(metadata, target)).isInstanceOf(TransferException.class)
                    .extracting(e -> ((TransferException) e).status()).isEqualTo(OperationStatus.ERRORED);
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(consumer.options().operationTimeout());
        }
        assertThat(consumer.inFlightOperations()).isZero();
        assertNothingRegistered();
    }

    @Test
    void legacyHexMetadataIsWrittenOnRequestAndReadBack() {
        byte[] data = TestData.random(4096);
        try (Descriptor source = new Descriptor(data); Descriptor target = Descriptor.allocate(data.length)) {
            ReadableOperation readable = producer.createReadable(source);
            RdmaMetadata hex = readable.hexEncodedMetadata();
            RdmaMetadata b64 = readable.metadata();
            assertThat(readable.metadata()).isSameAs(b64);
            assertThat(readable.hexEncodedMetadata()).isSameAs(hex);
            assertThat(b64.nixlMetadata()).startsWith("b64:");
            assertThat(hex.nixlMetadata()).matches("[0-9a-f]+"); // Python's bytes.hex(): lowercase, no prefix
            assertThat(hex.decodeNixlMetadata()).isEqualTo(b64.decodeNixlMetadata());
            assertThat(hex.descriptors()).isEqualTo(b64.descriptors());
            assertThat(hex.notificationKey()).isEqualTo(b64.notificationKey());

            consumer.beginRead(RdmaMetadata.fromJson(hex.toJson()), target).waitForCompletion(WAIT);
            readable.waitForCompletion(WAIT);
            assertThat(target.toByteArray()).isEqualTo(data);
        }
        assertNothingRegistered();
    }

    @Test
    void descriptorsBeyondTwoGibibytesMoveBothWays() {
        long size = (2L << 30) + 4099; // past every int offset
        try (Descriptor source = Descriptor.allocate(size); Descriptor target = Descriptor.allocate(size)) {
            fillPattern(source, 1);
            ReadableOperation readable = producer.createReadable(source);
            consumer.beginRead(readable.metadata(), target).waitForCompletion(WAIT);
            readable.waitForCompletion(WAIT);
            assertSameContent(source, target);

            fillPattern(target, 2);
            WritableOperation writable = producer.createWritable(source);
            consumer.beginWrite(target, writable.metadata()).waitForCompletion(WAIT);
            writable.waitForCompletion(WAIT);
            assertSameContent(target, source);
        }
        assertNothingRegistered();
    }

    /** Writes a position-dependent pattern, so misplaced bytes show. */
    static void fillPattern(Descriptor descriptor, long salt) {
        int chunk = 1 << 28;
        for (long offset = 0; offset < descriptor.size(); offset += chunk) {
            int length = (int) Math.min(chunk, descriptor.size() - offset);
            ByteBuffer view = descriptor.asByteBuffer(offset, length).order(ByteOrder.LITTLE_ENDIAN);
            long base = offset / 8;
            while (view.remaining() >= 8) {
                view.putLong((base++ * 0x9E3779B97F4A7C15L) ^ salt);
            }
            while (view.hasRemaining()) {
                view.put((byte) salt);
            }
        }
    }

    static void assertSameContent(Descriptor expected, Descriptor actual) {
        assertThat(actual.size()).isEqualTo(expected.size());
        int chunk = 1 << 28;
        for (long offset = 0; offset < expected.size(); offset += chunk) {
            int length = (int) Math.min(chunk, expected.size() - offset);
            int mismatch = expected.asByteBuffer(offset, length).mismatch(actual.asByteBuffer(offset, length));
            assertThat(mismatch).as("first differing byte after offset %d", offset).isEqualTo(-1);
        }
    }

    @Test
    void scatterGatherOverManyDescriptorsIncludingZeroSize() {
        int[] sizes = {0, 1, 7, 4096, 65536, 3, 1 << 20, 0, 12345};
        List<byte[]> data = new ArrayList<>();
        List<Descriptor> sources = new ArrayList<>();
        List<Descriptor> targets = new ArrayList<>();
        for (int size : sizes) {
            byte[] bytes = TestData.random(size);
            data.add(bytes);
            sources.add(new Descriptor(bytes));
            targets.add(Descriptor.allocate(size));
        }
        ReadableOperation readable = producer.createReadable(sources);
        ReadOperation read = consumer.beginRead(readable.metadata(), targets);
        read.waitForCompletion(WAIT);
        readable.waitForCompletion(WAIT);
        for (int i = 0; i < sizes.length; i++) {
            assertThat(targets.get(i).toByteArray()).as("descriptor %d", i).isEqualTo(data.get(i));
        }
        // And back again with a WRITE into the producer's buffers.
        List<byte[]> fresh = new ArrayList<>();
        for (int i = 0; i < sizes.length; i++) {
            byte[] bytes = TestData.random(sizes[i]);
            fresh.add(bytes);
            targets.get(i).asByteBuffer().put(bytes);
        }
        WritableOperation writable = producer.createWritable(sources);
        consumer.beginWrite(targets, writable.metadata()).waitForCompletion(WAIT);
        writable.waitForCompletion(WAIT);
        for (int i = 0; i < sizes.length; i++) {
            assertThat(sources.get(i).toByteArray()).as("descriptor %d", i).isEqualTo(fresh.get(i));
        }
        sources.forEach(Descriptor::close);
        targets.forEach(Descriptor::close);
        assertNothingRegistered();
    }

    @Test
    void directByteBufferDescriptorsUseTheRemainingBytes() {
        ByteBuffer source = ByteBuffer.allocateDirect(1000);
        byte[] data = TestData.random(1000);
        source.put(data).position(100).limit(900);
        ByteBuffer target = ByteBuffer.allocateDirect(800);
        try (Descriptor from = new Descriptor(source); Descriptor to = new Descriptor(target)) {
            assertThat(from.size()).isEqualTo(800);
            ReadableOperation readable = producer.createReadable(from);
            consumer.beginRead(readable.metadata(), to).waitForCompletion(WAIT);
            readable.waitForCompletion(WAIT); // the passive side completes on the notification, a moment later
            byte[] received = new byte[800];
            target.get(received);
            assertThat(received).isEqualTo(Arrays.copyOfRange(data, 100, 900));
        }
    }

    @Test
    void concurrentOperationsCompleteIndependently() throws Exception {
        int count = 64;
        List<Descriptor> sources = new ArrayList<>();
        List<Descriptor> targets = new ArrayList<>();
        List<ReadableOperation> readables = new ArrayList<>();
        List<CompletableFuture<Void>> reads = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            sources.add(new Descriptor(TestData.random(1000 + i * 97)));
            targets.add(Descriptor.allocate(1000 + i * 97));
            readables.add(producer.createReadable(sources.get(i)));
        }
        for (int i = 0; i < count; i++) {
            reads.add(consumer.beginRead(readables.get(i).metadata(), targets.get(i)).completion());
        }
        CompletableFuture.allOf(reads.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);
        for (int i = 0; i < count; i++) {
            readables.get(i).waitForCompletion(WAIT);
            assertThat(targets.get(i).toByteArray()).isEqualTo(sources.get(i).toByteArray());
        }
        sources.forEach(Descriptor::close);
        targets.forEach(Descriptor::close);
        assertNothingRegistered();
    }

    @Test
    void wrongKindIsRefusedBeforeAnythingMoves() {
        try (Descriptor buffer = Descriptor.allocate(16); Descriptor local = Descriptor.allocate(16)) {
            ReadableOperation readable = producer.createReadable(buffer);
            WritableOperation writable = producer.createWritable(Descriptor.allocate(16));
            assertThatThrownBy(() -> consumer.beginWrite(local, readable.metadata()))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ReadableOperation");
            assertThatThrownBy(() -> consumer.beginRead(writable.metadata(), local))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("WritableOperation");
            assertThat(consumer.inFlightOperations()).isZero();
            assertThat(consumer.registeredBytes()).isZero();
            readable.close();
            writable.close();
        }
    }

    @Test
    void mismatchedCountsAndSizesAreRefused() {
        try (Descriptor a = Descriptor.allocate(16); Descriptor b = Descriptor.allocate(16);
             Descriptor small = Descriptor.allocate(8); Descriptor c = Descriptor.allocate(16)) {
            ReadableOperation readable = producer.createReadable(a, b);
            assertThatThrownBy(() -> consumer.beginRead(readable.metadata(), c))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("2");
            assertThatThrownBy(() -> consumer.beginRead(readable.metadata(), c, small))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("localDescriptors[1] and the remote descriptor at 1 must have the same size: 8 != 16");
            ReadableOperation single = producer.createReadable(a.size() == 16 ? Descriptor.allocate(16) : a);
            assertThatThrownBy(() -> consumer.beginRead(single.metadata(), small))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("The local and the remote descriptor must be the same size: 8 != 16");
            assertThatThrownBy(() -> consumer.beginRead(single.metadata(), List.of()))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("localDescriptors must not be empty");
            assertThatThrownBy(() -> producer.createReadable())
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("localDescriptors must not be empty");
            readable.close();
            single.close();
        }
        assertThat(consumer.inFlightOperations()).isZero();
    }

    @Test
    void deadPeerEndsErroredQuickly() {
        try (Descriptor source = Descriptor.allocate(1024); Descriptor target = Descriptor.allocate(1024)) {
            ReadableOperation readable = producer.createReadable(source);
            RdmaMetadata metadata = readable.metadata();
            producer.close();
            long start = System.nanoTime();
            ReadOperation read = consumer.beginRead(metadata, target);
            assertThatThrownBy(() -> read.waitForCompletion(WAIT)).isInstanceOf(TransferException.class);
            assertThat(read.status()).isEqualTo(OperationStatus.ERRORED);
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(consumer.options().operationTimeout());
        }
        assertNothingRegistered();
    }

    @Test
    void cancelMidTransferStopsTheOperation() {
        int size = 256 << 20;
        try (Descriptor source = Descriptor.allocate(size); Descriptor target = Descriptor.allocate(size)) {
            ReadableOperation readable = producer.createReadable(source);
            ReadOperation read = consumer.beginRead(readable.metadata(), target);
            read.cancel();
            assertThat(read.status()).isIn(OperationStatus.CANCELLED, OperationStatus.COMPLETE);
            if (read.status() == OperationStatus.CANCELLED) {
                assertThatThrownBy(() -> read.waitForCompletion(WAIT)).isInstanceOf(TransferException.class)
                        .extracting(e -> ((TransferException) e).status()).isEqualTo(OperationStatus.CANCELLED);
                // NIXL may still deliver the notification of a transfer that was already on the wire; the embedded
                // transport's readable may learn that its reader left mid-read (ERRORED).
                assertThat(readable.status()).isIn(OperationStatus.INITIALIZED, OperationStatus.COMPLETE,
                        OperationStatus.ERRORED);
                assertThatThrownBy(read::results).isInstanceOf(IllegalStateException.class);
            }
            read.cancel(); // cancelling an ended operation does nothing
            readable.close();
        }
        assertNothingRegistered();
    }

    @Test
    void descriptorInUseCannotBeClosed() {
        Descriptor buffer = Descriptor.allocate(64);
        ReadableOperation readable = producer.createReadable(buffer);
        assertThatThrownBy(buffer::close).isInstanceOf(IllegalStateException.class).hasMessageContaining("in use");
        readable.close();
        buffer.close();
        assertThatThrownBy(() -> producer.createReadable(buffer)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
    }

    @Test
    void passiveWaitTimesOutWithoutEndingTheOperation() {
        try (Descriptor buffer = Descriptor.allocate(64)) {
            ReadableOperation readable = producer.createReadable(buffer);
            assertThatThrownBy(() -> readable.waitForCompletion(Duration.ofMillis(50)))
                    .isInstanceOf(WaitTimeoutException.class).hasMessageContaining("did not end within")
                    .extracting(e -> ((WaitTimeoutException) e).status()).isEqualTo(OperationStatus.INITIALIZED);
            assertThat(readable.status()).isEqualTo(OperationStatus.INITIALIZED);
            readable.close();
        }
    }

    @Test
    void preRegisteredDescriptorStaysRegisteredAcrossOperations() {
        try (Descriptor buffer = new Descriptor(TestData.random(4096)); Descriptor target = Descriptor.allocate(4096)) {
            buffer.registerMemory(producer);
            buffer.registerMemory(producer); // idempotent
            assertThat(producer.registeredBytes()).isEqualTo(4096);
            for (int i = 0; i < 3; i++) {
                ReadableOperation readable = producer.createReadable(buffer);
                consumer.beginRead(readable.metadata(), target).waitForCompletion(WAIT);
                readable.waitForCompletion(WAIT);
                assertThat(producer.registeredBytes()).isEqualTo(4096);
            }
        }
        assertNothingRegistered();
    }

    /**
     * Issue 22 item 6: threads that read while the consumer closes see the close as such: a read that had started
     * ends CANCELLED ({@link TransferException}), one that starts during or after the close gets
     * {@link ConnectorClosedException}; never another type (NIXL threw {@code IllegalStateException("Connection … is
     * closed")} at those that raced the close).
     */
    @Test
    void threadsTransferringWhileTheConnectorClosesGetConnectorClosedException() throws Exception {
        int threads = 4;
        List<Throwable> thrown = java.util.Collections.synchronizedList(new ArrayList<>());
        try (Descriptor source = new Descriptor(TestData.random(4096))) {
            ReadableOperation readable = producer.createReadable(1_000_000, source);
            RdmaMetadata metadata = readable.metadata();
            for (int round = 0; round < 20; round++) {
                Connector closing = new Connector(options().workerId("closing-" + round).build());
                java.util.concurrent.CountDownLatch reading = new java.util.concurrent.CountDownLatch(threads);
                List<Thread> readers = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    Thread reader = new Thread(() -> {
                        try (Descriptor target = Descriptor.allocate(4096)) {
                            for (int i = 0; ; i++) {
                                if (i == 2) {
                                    reading.countDown();
                                }
                                closing.read(metadata, target);
                            }
                        } catch (Throwable e) {
                            thrown.add(e);
                            reading.countDown();
                        }
                    }, "reader-" + t);
                    readers.add(reader);
                    reader.start();
                }
                assertThat(reading.await(60, TimeUnit.SECONDS)).isTrue();
                closing.close();
                for (Thread reader : readers) {
                    reader.join(TimeUnit.SECONDS.toMillis(60));
                }
            }
            readable.close();
        }
        assertThat(thrown).hasSize(20 * threads);
        for (Throwable e : thrown) {
            if (e instanceof TransferException transfer) {
                assertThat(transfer.status()).as("%s", e).isEqualTo(OperationStatus.CANCELLED);
            } else {
                assertThat(e).as("what a thread that raced the close got").isInstanceOf(ConnectorClosedException.class);
            }
        }
    }

    @Test
    void closingTheConnectorCancelsWhatIsInFlight() {
        Descriptor buffer = Descriptor.allocate(64);
        ReadableOperation readable = producer.createReadable(buffer);
        producer.close();
        assertThat(readable.status()).isEqualTo(OperationStatus.CANCELLED);
        assertThat(producer.registeredBytes()).isZero();
        assertThatThrownBy(() -> producer.createReadable(buffer)).isInstanceOf(ConnectorClosedException.class)
                .hasMessageContaining("closed");
        buffer.close();
    }

    @Test
    void aFanOutReadableCompletesAfterItsLastReaderAndCountsTheReads() {
        byte[] data = TestData.random(256 * 1024);
        try (Connector third = new Connector(options().workerId("third").build());
             Descriptor source = new Descriptor(data);
             Descriptor first = Descriptor.allocate(data.length);
             Descriptor second = Descriptor.allocate(data.length);
             Descriptor last = Descriptor.allocate(data.length)) {
            ReadableOperation readable = producer.createReadable(3, source);
            assertThat(readable.readers()).isEqualTo(3);
            RdmaMetadata metadata = RdmaMetadata.fromJson(readable.metadata().toJson()); // one document for all

            consumer.beginRead(metadata, first).waitForCompletion(WAIT);
            third.beginRead(metadata, second).waitForCompletion(WAIT);
            awaitReads(readable, 2);
            assertThat(readable.status()).isEqualTo(OperationStatus.INITIALIZED);
            assertThat(producer.registeredBytes()).as("registered until the last reader").isEqualTo(data.length);

            consumer.beginRead(metadata, last).waitForCompletion(WAIT);
            readable.waitForCompletion(WAIT);
            assertThat(readable.status()).isEqualTo(OperationStatus.COMPLETE);
            assertThat(readable.readsCompleted()).isEqualTo(3);
            assertThat(producer.registeredBytes()).isZero();
            for (Descriptor target : List.of(first, second, last)) {
                assertThat(target.toByteArray()).isEqualTo(data);
            }
        }
        assertNothingRegistered();
    }

    @Test
    void aFanOutReadableThatTimesOutSaysHowManyRead() {
        try (Connector patient = new Connector(options().workerId("patient").passiveTimeout(Duration.ofSeconds(2)).build());
             Descriptor source = new Descriptor(TestData.random(4096));
             Descriptor target = Descriptor.allocate(4096)) {
            ReadableOperation readable = patient.createReadable(2, source);
            consumer.beginRead(readable.metadata(), target).waitForCompletion(WAIT);
            assertThatThrownBy(() -> readable.waitForCompletion(WAIT)).isInstanceOf(TransferTimeoutException.class)
                    .hasMessageContaining("1 of 2 notified");
            assertThat(readable.status()).isEqualTo(OperationStatus.ERRORED);
            assertThat(readable.readsCompleted()).isEqualTo(1);
            // Released at once on the embedded transport; NIXL drains a window that ended before its last
            // notification (a reader may still be mid-transfer) for up to its drain limit of about 2 s.
            await().atMost(Duration.ofSeconds(10)).until(() -> patient.registeredBytes() == 0);
            assertThat(patient.registeredBytes()).isZero();
        }
        assertThatThrownBy(() -> producer.createReadable(0, Descriptor.allocate(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least 1");
        assertNothingRegistered();
    }

    static void awaitReads(ReadableOperation readable, int reads) {
        // the passive side learns of a read a moment after the reader does
        await().alias(reads + " reads").atMost(WAIT).pollInterval(Duration.ofMillis(5))
                .until(() -> readable.readsCompleted() >= reads);
    }

    @Test
    void operationsSayWhichBackendAndPathMovedTheBytes() {
        int size = 1 << 20;
        try (Descriptor source = new Descriptor(TestData.random(size)); Descriptor target = Descriptor.allocate(size)) {
            ReadableOperation readable = producer.createReadable(source);
            assertThat(readable.attributes()).isEqualTo(TransferAttributes.of(producer.backendName()));
            ReadOperation read = consumer.beginRead(readable.metadata(), target);
            read.waitForCompletion(WAIT);
            readable.waitForCompletion(WAIT);
            TransferAttributes attributes = read.attributes();
            assertThat(attributes.transport()).isEqualTo(consumer.backendName());
            assertThat(attributes.backend()).isNotNull();
            assertThat(attributes.streams()).isEqualTo(1);
            if (consumer.backendName().equals("nixl")) {
                assertThat(attributes.backend()).isEqualTo("UCX");
                assertThat(attributes.peer()).isNull();
                // NIXL's own telemetry of the request: what it moved and how long it took
                TransferAttributes.Telemetry telemetry = attributes.telemetry();
                assertThat(telemetry).isNotNull();
                assertThat(telemetry.bytes()).isEqualTo(size);
                assertThat(telemetry.descriptors()).isEqualTo(1L);
                assertThat(telemetry.transferMicros()).isNotNegative();
                assertThat(telemetry.postMicros()).isNotNegative();
                assertThat(consumer.transportStatus().details()).containsEntry("transfersByBackend", Map.of("UCX", 1L));
            } else {
                assertThat(attributes.backend()).isEqualTo("tcp");
                assertThat(attributes.telemetry()).isNull();
                String endpoint = producer.transportStatus().endpoint();
                assertThat(attributes.peer()).endsWith(endpoint.substring(endpoint.lastIndexOf(':')));
            }
            assertThat(readable.attributes()).isEqualTo(TransferAttributes.of(producer.backendName()));
        }
        assertNothingRegistered();
    }

    /** Registrations the backend itself holds (NIXL: regions registered with the agent; embedded: its table). */
    static int backendRegistrations(Connector connector) {
        Map<String, Object> details = connector.transportStatus().details();
        Object count = details.containsKey("registrations") ? details.get("registrations") : details.get("registeredRegions");
        assertThat(count).as("registration count in %s", details).isInstanceOf(Number.class);
        return ((Number) count).intValue();
    }

    /**
     * The shape of a KV cache: a list of blocks scattered over a registered pool on both sides, in an order that is
     * neither the pool's nor the same on both sides. Byte-exact, and nothing outside the target blocks is touched.
     */
    @ParameterizedTest(name = "READ and WRITE of {0} scattered blocks")
    @ValueSource(ints = {1, 2, 7, 128, 1024, 4096})
    void blockListsScatteredOverARegisteredPoolMoveByteExactBothWays(int blocks) {
        int blockSize = blocks >= 1024 ? 4096 : 16384;
        int poolBlocks = 2 * blocks + 1;
        long poolSize = (long) poolBlocks * blockSize;
        java.util.Random order = new java.util.Random(blocks);
        try (Descriptor sourcePool = Descriptor.allocate(poolSize); Descriptor targetPool = Descriptor.allocate(poolSize)) {
            fillPattern(sourcePool, 7);
            zero(targetPool);
            sourcePool.registerMemory(producer);
            targetPool.registerMemory(consumer);
            int[] sourceBlocks = scatteredBlocks(blocks, 0, order);
            int[] targetBlocks = scatteredBlocks(blocks, 1, order);

            ReadableOperation readable = producer.createReadable(slices(sourcePool, sourceBlocks, blockSize));
            ReadOperation read = consumer.beginRead(RdmaMetadata.fromJson(readable.metadata().toJson()),
                    slices(targetPool, targetBlocks, blockSize));
            read.waitForCompletion(WAIT);
            readable.waitForCompletion(WAIT);
            assertThat(read.status()).isEqualTo(OperationStatus.COMPLETE);
            assertBlocksMoved(sourcePool, sourceBlocks, targetPool, targetBlocks, blockSize);

            // WRITE back the other way, into different blocks of the source pool
            zero(sourcePool);
            int[] writtenBlocks = scatteredBlocks(blocks, 1, order);
            WritableOperation writable = producer.createWritable(slices(sourcePool, writtenBlocks, blockSize));
            WriteOperation write = consumer.beginWrite(slices(targetPool, targetBlocks, blockSize),
                    RdmaMetadata.fromJson(writable.metadata().toJson()));
            write.waitForCompletion(WAIT);
            writable.waitForCompletion(WAIT);
            assertThat(write.status()).isEqualTo(OperationStatus.COMPLETE);
            assertBlocksMoved(targetPool, targetBlocks, sourcePool, writtenBlocks, blockSize);
            assertThat(backendRegistrations(producer)).as("the pool's one registration").isEqualTo(1);
            assertThat(backendRegistrations(consumer)).as("the pool's one registration").isEqualTo(1);
        }
        assertNothingRegistered();
    }

    /** {@code count} distinct pool blocks of the given parity (so no two are adjacent), shuffled. */
    static int[] scatteredBlocks(int count, int parity, java.util.Random order) {
        List<Integer> indices = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            indices.add(2 * i + parity);
        }
        java.util.Collections.shuffle(indices, order);
        return indices.stream().mapToInt(Integer::intValue).toArray();
    }

    static List<Descriptor> slices(Descriptor pool, int[] blocks, int blockSize) {
        List<Descriptor> slices = new ArrayList<>(blocks.length);
        for (int block : blocks) {
            slices.add(pool.slice((long) block * blockSize, blockSize));
        }
        return slices;
    }

    static void zero(Descriptor descriptor) {
        ByteBuffer view = descriptor.asByteBuffer(0, (int) descriptor.size());
        while (view.hasRemaining()) {
            view.put((byte) 0);
        }
    }

    /** Block {@code i} of {@code to} holds block {@code i} of {@code from}; every byte of {@code to} outside them is 0. */
    static void assertBlocksMoved(Descriptor from, int[] fromBlocks, Descriptor to, int[] toBlocks, int blockSize) {
        boolean[] written = new boolean[(int) (to.size() / blockSize)];
        for (int i = 0; i < fromBlocks.length; i++) {
            ByteBuffer expected = from.asByteBuffer((long) fromBlocks[i] * blockSize, blockSize);
            ByteBuffer actual = to.asByteBuffer((long) toBlocks[i] * blockSize, blockSize);
            assertThat(actual.mismatch(expected)).as("first differing byte of block %d", i).isEqualTo(-1);
            written[toBlocks[i]] = true;
        }
        ByteBuffer zeros = ByteBuffer.allocate(blockSize);
        for (int block = 0; block < written.length; block++) {
            if (!written[block]) {
                ByteBuffer untouched = to.asByteBuffer((long) block * blockSize, blockSize);
                assertThat(untouched.mismatch(zeros)).as("first non-zero byte of unlisted block %d", block).isEqualTo(-1);
            }
        }
    }

    @Test
    void slicesShareTheirBuffersRegistrationInEveryRole() {
        int size = 1 << 20;
        byte[] data = TestData.random(size);
        try (Descriptor source = new Descriptor(data); Descriptor landing = Descriptor.allocate(size)) {
            source.registerMemory(producer);
            landing.registerMemory(consumer);
            assertThat(backendRegistrations(producer)).isEqualTo(1);
            assertThat(backendRegistrations(consumer)).isEqualTo(1);

            // passive side slices: two readables over different ranges of one registered buffer, read at once
            Descriptor first = source.slice(4096, 8192);
            Descriptor second = source.slice(1 << 19, 100_000);
            assertThat(first.parent()).isSameAs(source);
            assertThat(first.slice(10, 20).parent()).isSameAs(source);
            assertThat(first.ptr()).isEqualTo(source.ptr() + 4096);
            ReadableOperation readFirst = producer.createReadable(first);
            ReadableOperation readSecond = producer.createReadable(second);
            assertThat(readFirst.metadata().descriptors().get(0).ptr()).isEqualTo(source.ptr() + 4096);
            // active side slices of one registered landing buffer
            Descriptor intoFirst = landing.slice(0, 8192);
            Descriptor intoSecond = landing.slice(8192, 100_000);
            ReadOperation a = consumer.beginRead(readFirst.metadata(), intoFirst);
            ReadOperation b = consumer.beginRead(readSecond.metadata(), intoSecond);
            assertThat(backendRegistrations(producer)).as("producer registrations while slices are live").isEqualTo(1);
            assertThat(backendRegistrations(consumer)).as("consumer registrations while slices are live").isEqualTo(1);
            a.waitForCompletion(WAIT);
            b.waitForCompletion(WAIT);
            readFirst.waitForCompletion(WAIT);
            readSecond.waitForCompletion(WAIT);
            assertThat(intoFirst.toByteArray()).isEqualTo(java.util.Arrays.copyOfRange(data, 4096, 4096 + 8192));
            assertThat(intoSecond.toByteArray()).isEqualTo(java.util.Arrays.copyOfRange(data, 1 << 19, (1 << 19) + 100_000));

            // WRITE from a slice into a slice of a writable
            WritableOperation writable = producer.createWritable(source.slice(size - 8192, 8192));
            consumer.beginWrite(landing.slice(100, 8192), writable.metadata()).waitForCompletion(WAIT);
            writable.waitForCompletion(WAIT);
            assertThat(source.asByteBuffer(size - 8192, 8192)).isEqualTo(landing.asByteBuffer(100, 8192));
            assertThat(backendRegistrations(producer)).isEqualTo(1);
            assertThat(backendRegistrations(consumer)).isEqualTo(1);
            assertThat(producer.registeredBytes()).isEqualTo(size);
        }
        assertThat(backendRegistrations(producer)).isZero();
        assertThat(backendRegistrations(consumer)).isZero();
        assertNothingRegistered();
    }

    @Test
    void aSliceOfAnUnregisteredBufferRegistersTheWholeBufferOnceForItsOperation() {
        try (Descriptor source = new Descriptor(TestData.random(4096)); Descriptor target = Descriptor.allocate(1024)) {
            ReadableOperation readable = producer.createReadable(source.slice(1024, 1024));
            assertThat(producer.registeredBytes()).isEqualTo(4096);
            assertThat(backendRegistrations(producer)).isEqualTo(1);
            consumer.beginRead(readable.metadata(), target).waitForCompletion(WAIT);
            readable.waitForCompletion(WAIT);
            assertThat(target.toByteArray()).isEqualTo(java.util.Arrays.copyOfRange(source.toByteArray(), 1024, 2048));
        }
        assertNothingRegistered();
    }

    @Test
    void slicesCheckTheirRangeAndTheirBuffersLife() {
        Descriptor buffer = Descriptor.allocate(64);
        assertThatThrownBy(() -> buffer.slice(60, 5)).isInstanceOf(IndexOutOfBoundsException.class)
                .hasMessageContaining("outside descriptor of 64 bytes");
        assertThatThrownBy(() -> buffer.slice(-1, 5)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> buffer.slice(0, -1)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> buffer.slice(Long.MAX_VALUE, 1)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThat(buffer.slice(64, 0).size()).isZero();
        Descriptor slice = buffer.slice(8, 16);
        ReadableOperation readable = producer.createReadable(slice);
        assertThatThrownBy(buffer::close).as("the original of a slice in use").isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("in use");
        readable.close();
        slice.close(); // owns nothing: the buffer stays usable
        assertThat(buffer.slice(0, 8).toByteArray()).hasSize(8);
        buffer.close();
        // NIXL drains a window closed before its notification (a peer may be mid-read) for up to its drain limit of
        // about 2 s; the buffer's close returned at once (the library frees its own memory after that).
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (producer.registeredBytes() != 0 && System.nanoTime() < deadline) {
            LockSupport.parkNanos(10_000_000);
        }
        assertThatThrownBy(() -> producer.createReadable(slice)).isInstanceOf(IllegalStateException.class);
        Descriptor orphan = Descriptor.allocate(8);
        Descriptor view = orphan.slice(0, 8);
        orphan.close();
        assertThatThrownBy(view::toByteArray).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        assertThatThrownBy(() -> producer.createReadable(view)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> view.registerMemory(producer)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> orphan.slice(0, 1)).isInstanceOf(IllegalStateException.class);
        // a slice's own registration is of the whole buffer: the buffer cannot be freed while it stands
        Descriptor registered = Descriptor.allocate(64);
        Descriptor holder = registered.slice(0, 32);
        holder.registerMemory(producer);
        assertThat(producer.registeredBytes()).isEqualTo(64);
        assertThatThrownBy(registered::close).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("registered through 1 of its slices");
        holder.close();
        assertThat(producer.registeredBytes()).isZero();
        registered.close();
        Descriptor remote = Descriptor.fromSerialized(new SerializedDescriptor("cpu", 4096, 16));
        assertThatThrownBy(() -> remote.slice(0, 8)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("remote");
        assertNothingRegistered();
    }

    void assertNothingRegistered() {
        assertThat(consumer.registeredBytes()).as("consumer registered bytes").isZero();
        assertThat(consumer.inFlightOperations()).as("consumer operations in flight").isZero();
        if (!producer.isAccepting()) {
            return;
        }
        assertThat(producer.registeredBytes()).as("producer registered bytes").isZero();
        assertThat(producer.inFlightOperations()).as("producer operations in flight").isZero();
    }
}
