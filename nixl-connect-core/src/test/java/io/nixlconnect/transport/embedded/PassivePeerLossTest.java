package io.nixlconnect.transport.embedded;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nixlconnect.Connector;
import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.Descriptor;
import io.nixlconnect.OperationStatus;
import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.ReadableOperation;
import io.nixlconnect.TransferException;
import io.nixlconnect.WaitTimeoutException;
import io.nixlconnect.WritableOperation;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The passive side learns that its peer died mid-transfer: a reader (or writer) whose connection drops after it
 * started on the memory and before it notified ends the passive operation ERRORED at once, with the reason —
 * not at the passive timeout (set to an hour here), over the socket and after a granted direct copy alike. A
 * fan-out readable waits on for its other readers.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PassivePeerLossTest {

    private static final int SIZE = 32 << 20;
    private static final Duration WAIT = Duration.ofSeconds(20);

    private Connector connector;

    @BeforeEach
    void start() {
        connector = new Connector(ConnectorOptions.builder().workerId("passive").transports(EmbeddedSettings.defaults())
                .passiveTimeout(Duration.ofHours(1)).build());
    }

    @AfterEach
    void stop() {
        connector.close();
    }

    /** A peer that starts a transfer by hand, moves {@code bytes} of it, and vanishes (its socket closes). */
    private static void startAndVanish(RdmaMetadata metadata, byte type, int bytes) throws IOException {
        EmbeddedMetadata peer = EmbeddedMetadata.decode(metadata.decodeNixlMetadata());
        long ptr = metadata.descriptors().get(0).ptr();
        try (Link link = Link.plain(SocketChannel.open(new InetSocketAddress(peer.host(), peer.port())))) {
            byte[] credential = metadata.notificationKey().getBytes(StandardCharsets.UTF_8); // the window's credential
            Wire.writeFully(link, Wire.encodeRequest(type, peer.agent(), credential, new long[] {ptr}, new long[] {SIZE}));
            assertThat(Wire.readResponse(link)).as("the passive side accepted the request").isNull();
            ByteBuffer chunk = ByteBuffer.allocate(bytes);
            if (type == Wire.READ) {
                Wire.readFully(link, chunk);
            } else {
                Wire.writeFully(link, chunk);
            }
        }
    }

    /**
     * A same-host reader that asks for a direct copy (cross-memory attach), is granted it and then, instead of
     * reporting, either vanishes ({@code fallBack} false: what a cancelled or killed reader does mid-copy) or
     * reports an aborted copy and streams the same ranges as a READ on the same connection ({@code fallBack} true:
     * what it does when the kernel refuses the copy), and notifies.
     */
    private static void grantedDirectCopy(RdmaMetadata metadata, boolean fallBack) throws IOException {
        EmbeddedMetadata peer = EmbeddedMetadata.decode(metadata.decodeNixlMetadata());
        long[] addresses = {metadata.descriptors().get(0).ptr()};
        long[] lengths = {SIZE};
        byte[] credential = metadata.notificationKey().getBytes(StandardCharsets.UTF_8);
        try (Link link = Link.plain(SocketChannel.open(new InetSocketAddress(peer.host(), peer.port())))) {
            Wire.writeGrantRequest(link, peer.agent().getBytes(StandardCharsets.UTF_8), credential, addresses, lengths,
                    GrantProof.challenge());
            StringBuilder refused = new StringBuilder();
            Wire.Grant grant = Wire.readGrant(link, refused);
            assertThat(grant).as("granted (refused: %s)", refused).isNotNull();
            assertThat(grant.declined()).isNull();
            if (!fallBack) {
                return;
            }
            Wire.writeCopyOutcome(link, false);
            assertThat(Wire.readResponse(link)).isNull();
            Wire.writeFully(link, Wire.encodeRequest(Wire.READ, peer.agent(), credential, addresses, lengths));
            assertThat(Wire.readResponse(link)).as("the window still serves the streamed READ").isNull();
            Wire.readFully(link, ByteBuffer.allocate(SIZE));
            Wire.writeFully(link, Wire.encodeRequest(Wire.NOTIFY, peer.agent(), credential, new long[0], new long[0]));
            assertThat(Wire.readResponse(link)).isNull();
        }
    }

    @Test
    void aReaderGrantedADirectCopyThatVanishesBeforeReportingEndsTheReadableErroredAtOnce() throws Exception {
        try (Descriptor source = Descriptor.allocate(SIZE)) {
            ReadableOperation readable = connector.createReadable(source);
            grantedDirectCopy(readable.metadata(), false);
            assertThatThrownBy(() -> readable.waitForCompletion(WAIT)).isInstanceOf(TransferException.class)
                    .hasMessageContaining("reading").hasMessageContaining("dropped before it notified");
            assertThat(readable.status()).isEqualTo(OperationStatus.ERRORED);
            assertThat(readable.transferPath()).isEqualTo(SameHostPeer.CROSS_MEMORY_ATTACH);
            assertThat(connector.registeredBytes()).isZero();
        }
    }

    @Test
    void aReaderThatAbortsItsDirectCopyAndStreamsInsteadCompletesTheReadable() throws Exception {
        try (Descriptor source = Descriptor.allocate(SIZE)) {
            ReadableOperation readable = connector.createReadable(source);
            grantedDirectCopy(readable.metadata(), true);
            readable.waitForCompletion(WAIT);
            assertThat(readable.status()).isEqualTo(OperationStatus.COMPLETE);
            assertThat(readable.transferPath()).isEqualTo(SameHostPeer.TCP);
        }
    }

    @Test
    void aReaderThatDiesMidReadEndsTheReadableErroredAtOnce() throws Exception {
        try (Descriptor source = Descriptor.allocate(SIZE)) {
            ReadableOperation readable = connector.createReadable(source);
            startAndVanish(readable.metadata(), Wire.READ, 1 << 20);
            assertThatThrownBy(() -> readable.waitForCompletion(WAIT)).isInstanceOf(TransferException.class)
                    .hasMessageContaining("reading").hasMessageContaining("dropped before it notified");
            assertThat(readable.status()).isEqualTo(OperationStatus.ERRORED);
            assertThat(readable.readsCompleted()).isZero();
            assertThat(connector.registeredBytes()).isZero();
        }
    }

    @Test
    void aWriterThatDiesMidWriteEndsTheWritableErroredAtOnce() throws Exception {
        try (Descriptor target = Descriptor.allocate(SIZE)) {
            WritableOperation writable = connector.createWritable(target);
            startAndVanish(writable.metadata(), Wire.WRITE, 1 << 20);
            assertThatThrownBy(() -> writable.waitForCompletion(WAIT)).isInstanceOf(TransferException.class)
                    .hasMessageContaining("writing").hasMessageContaining("dropped before it notified");
            assertThat(writable.status()).isEqualTo(OperationStatus.ERRORED);
            assertThat(connector.registeredBytes()).isZero();
        }
    }

    @Test
    void aFanOutReadableWaitsForItsOtherReadersWhenOneDies() throws Exception {
        try (Connector reader = new Connector(ConnectorOptions.builder().workerId("reader")
                .transports(EmbeddedSettings.defaults()).build());
             Descriptor source = Descriptor.allocate(SIZE);
             Descriptor target = Descriptor.allocate(SIZE)) {
            ReadableOperation readable = connector.createReadable(2, source);
            startAndVanish(readable.metadata(), Wire.READ, 1 << 20);
            assertThatThrownBy(() -> readable.waitForCompletion(Duration.ofMillis(500)))
                    .as("another reader may still come").isInstanceOf(WaitTimeoutException.class);
            assertThat(readable.status()).isEqualTo(OperationStatus.INITIALIZED);

            reader.beginRead(readable.metadata(), target).waitForCompletion(WAIT);
            reader.beginRead(readable.metadata(), target).waitForCompletion(WAIT);
            readable.waitForCompletion(WAIT);
            assertThat(readable.readsCompleted()).isEqualTo(2);
        }
    }

    @Test
    void aCompletedReadThenADroppedConnectionChangesNothing() throws Exception {
        try (Connector reader = new Connector(ConnectorOptions.builder().workerId("reader")
                .transports(EmbeddedSettings.defaults()).build());
             Descriptor source = Descriptor.allocate(SIZE);
             Descriptor target = Descriptor.allocate(SIZE)) {
            ReadableOperation readable = connector.createReadable(source);
            reader.beginRead(readable.metadata(), target).waitForCompletion(WAIT);
            reader.close(); // drops its pooled connection after the notification
            readable.waitForCompletion(WAIT);
            assertThat(readable.status()).isEqualTo(OperationStatus.COMPLETE);
        }
    }
}
