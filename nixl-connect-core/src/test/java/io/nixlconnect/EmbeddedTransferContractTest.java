package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.sun.jna.Platform;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The transfer contract over the embedded transport, plus what only it guarantees: it serves nothing but the
 * memory of live passive operations (NIXL exposes all registered memory to peers that loaded it).
 *
 * <p>Runs once per path a READ can take: both connectors share this process, so with same-host copy on (the
 * default) every READ above 64 KiB copies directly (cross-memory attach; the kernel lets a process read itself), and
 * with it off every READ streams over the socket. READs of at most 64 KiB and WRITEs always stream. SameHostCopyTest covers the direct copy across
 * two processes.
 */
@ParameterizedClass(name = "READs over {0}")
@ValueSource(strings = {EmbeddedTransferContractTest.DIRECT, "tcp"})
class EmbeddedTransferContractTest extends TransferContractTest {

    static final String DIRECT = "cross-memory-attach";

    @Parameter
    String readPath;

    @BeforeEach
    void directCopiesNeedLinux() {
        assumeTrue(!readPath.equals(DIRECT) || (Platform.isLinux() && Platform.is64Bit()),
                "cross-memory attach is Linux (64-bit) only");
    }

    /** The embedded settings of both connectors: same-host copy on exactly when READs should take that path. */
    EmbeddedSettings settings() {
        return EmbeddedSettings.defaults().withSameHostCopy(readPath.equals(DIRECT));
    }

    @Override
    final ConnectorOptions.Builder options() {
        return ConnectorOptions.builder().transports(settings());
    }

    /**
     * READs above the one-round-trip limit (64 KiB) take the path under test; up to it they take one round trip over
     * the socket on either path (a direct copy needs two), and say so on both sides.
     */
    @ParameterizedTest(name = "READ of {0} bytes")
    @ValueSource(ints = {1, 4096, 64 << 10, (64 << 10) + 1, 1 << 20})
    void readsTakeThePathUnderTestAboveTheOneRoundTripLimit(int size) {
        try (Descriptor source = new Descriptor(TestData.random(size)); Descriptor target = Descriptor.allocate(size)) {
            ReadableOperation readable = producer.createReadable(source);
            ReadOperation read = consumer.beginRead(readable.metadata(), target);
            read.waitForCompletion(WAIT);
            readable.waitForCompletion(WAIT);
            String expected = size <= 64 << 10 ? "tcp" : readPath;
            assertThat(read.transferPath()).isEqualTo(expected);
            assertThat(readable.transferPath()).as("the passive side saw the same path").isEqualTo(expected);
            assertThat(target.toByteArray()).isEqualTo(source.toByteArray());
        }
    }

    @Test
    void rangesOutsideThePublishedDescriptorsAreRefused() {
        byte[] secret = TestData.random(4096);
        try (Descriptor published = new Descriptor(TestData.random(64)); Descriptor neighbour = new Descriptor(secret);
             Descriptor target = Descriptor.allocate(4096)) {
            ReadableOperation readable = producer.createReadable(published);
            RdmaMetadata genuine = readable.metadata();
            // Handcrafted: same agent and key, but pointing at memory that was never published.
            RdmaMetadata forged = new RdmaMetadata(List.of(new SerializedDescriptor("cpu", neighbour.ptr(), 4096)),
                    genuine.nixlMetadata(), genuine.notificationKey(), OperationKind.READ);
            ReadOperation read = consumer.beginRead(forged, target);
            assertThatThrownBy(() -> read.waitForCompletion(WAIT)).isInstanceOf(TransferException.class)
                    .hasMessageContaining("refused");
            assertThat(read.status()).isEqualTo(OperationStatus.ERRORED);
            assertThat(target.toByteArray()).isEqualTo(new byte[4096]);
            // A range that starts inside the published buffer but runs past its end is refused too.
            RdmaMetadata overrun = new RdmaMetadata(List.of(new SerializedDescriptor("cpu", published.ptr() + 32, 64)),
                    genuine.nixlMetadata(), genuine.notificationKey(), OperationKind.READ);
            try (Descriptor local = Descriptor.allocate(64)) {
                ReadOperation overrunRead = consumer.beginRead(overrun, local);
                assertThatThrownBy(() -> overrunRead.waitForCompletion(WAIT)).isInstanceOf(TransferException.class);
            }
            // Refused requests touched no memory; the refused reader reported its failure, which ended the readable
            // (issue 25: the publisher is told rather than left to its passive timeout).
            assertThatThrownBy(() -> readable.waitForCompletion(WAIT)).isInstanceOf(TransferException.class)
                    .hasMessageContaining("reported that its transfer ended without notifying")
                    .hasMessageContaining("refused");
            readable.close();
        }
    }

    @Test
    void memoryIsUnreachableOnceThePassiveOperationEnded() {
        try (Descriptor published = new Descriptor(TestData.random(256)); Descriptor target = Descriptor.allocate(256)) {
            ReadableOperation readable = producer.createReadable(published);
            RdmaMetadata metadata = readable.metadata();
            consumer.beginRead(metadata, target).waitForCompletion(WAIT);
            readable.waitForCompletion(WAIT);
            // A second read with the same metadata: the operation completed, its memory is no longer served.
            ReadOperation again = consumer.beginRead(metadata, target);
            assertThatThrownBy(() -> again.waitForCompletion(WAIT)).isInstanceOf(TransferException.class);

            ReadableOperation closedEarly = producer.createReadable(published);
            RdmaMetadata closedMetadata = closedEarly.metadata();
            closedEarly.close();
            assertThat(closedEarly.status()).isEqualTo(OperationStatus.CANCELLED);
            ReadOperation afterClose = consumer.beginRead(closedMetadata, target);
            assertThatThrownBy(() -> afterClose.waitForCompletion(WAIT)).isInstanceOf(TransferException.class);
        }
    }


    @Test
    void cancelDuringALargeReadStopsWritingIntoLocalMemory() throws Exception {
        long size = 1L << 30;
        try (Descriptor source = Descriptor.allocate(size); Descriptor target = Descriptor.allocate(size)) {
            fillPattern(source, 3);
            ReadableOperation readable = producer.createReadable(source);
            ReadOperation read = consumer.beginRead(readable.metadata(), target);
            // Let bytes flow: the passive side has served the start of the read (TLS takes a while to connect).
            await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(1))
                    .until(() -> target.asByteBuffer(0, 8).get(0) != 0);
            assertThat(target.asByteBuffer(0, 8).get(0)).as("first bytes arrived").isEqualTo((byte) 3);
            assertThat(read.transferPath()).isEqualTo(readPath);
            read.cancel();
            assertThat(read.status()).isEqualTo(OperationStatus.CANCELLED);
            // After cancel() returns nothing writes into the target any more.
            ByteBuffer tail = target.asByteBuffer(size - (1 << 20), 1 << 20);
            byte[] before = new byte[1 << 20];
            tail.duplicate().get(before);
            Thread.sleep(300);
            byte[] after = new byte[1 << 20];
            tail.duplicate().get(after);
            assertThat(after).isEqualTo(before);
            // The readable learns its reader is gone: from the reader's failure report, or from its connection
            // closing mid-read, whichever reaches the producer first (both are sent at the cancel).
            assertThatThrownBy(() -> readable.waitForCompletion(WAIT)).isInstanceOf(TransferException.class)
                    .satisfies(e -> assertThat(e.getMessage()).containsAnyOf("dropped before it notified",
                            "reported that its transfer ended without notifying: ReadOperation of worker 'consumer'"
                                    + " was cancelled"));
            assertThat(readable.status()).isEqualTo(OperationStatus.ERRORED);
            readable.close();
        }
        assertNothingRegistered();
    }

    /**
     * The passive side's close() can lose the race with the notification that completes it on a server
     * thread; it must still hand the descriptor back before returning, so that closing the descriptor right
     * after never finds it "still in use". Many rounds, since the race is a matter of timing.
     */
    @Test
    void descriptorClosesRightAfterItsReadableClosesWhileTheNotificationRaces() {
        for (int round = 0; round < 300; round++) {
            Descriptor source = new Descriptor(new byte[4096]);
            try (Descriptor target = Descriptor.allocate(4096)) {
                ReadableOperation readable = producer.createReadable(source);
                consumer.beginRead(readable.metadata(), target).waitForCompletion(WAIT);
                readable.close();
                source.close();
            }
        }
    }
}
