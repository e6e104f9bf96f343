package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.nixlconnect.transport.TransportSettings;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import io.nixlconnect.transport.nixl.NixlSettings;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 32: {@link Connector#introducePeer} makes a peer known before its first operation. On NIXL the peer is loaded
 * (UCX's endpoint created) before any read; on the embedded transport a connection to it is open and pooled. The
 * metadata's window is not touched: the read that follows completes the peer's readable. Bad metadata and a closed
 * connector are refused; an unreachable peer fails the introduction.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class IntroducePeerTest {

    private static final String LIBRARY_DIR = System.getenv("NIXL_LIBRARY_DIR");

    private static Connector connector(String workerId, TransportSettings transport) {
        return new Connector(ConnectorOptions.builder().workerId(workerId).transports(transport)
                .operationTimeout(Duration.ofSeconds(30)).build());
    }

    private static NixlSettings nixl() {
        assumeTrue(LIBRARY_DIR != null && !LIBRARY_DIR.isBlank(),
                "NIXL_LIBRARY_DIR is not set: run `eval \"$(.ci/nixl-setup.sh)\"` to test against a real NIXL");
        return NixlSettings.defaults().withLibraryDir(Path.of(LIBRARY_DIR));
    }

    @Test
    @Tag(TestTags.NIXL)
    void nixlLoadsTheIntroducedPeerBeforeAnyReadAndTheReadStillCompletesTheReadable() throws Exception {
        introducedThenRead(nixl(), statistics -> assertThat(statistics.cachedPeers()).isEqualTo(1));
    }

    @Test
    void theEmbeddedTransportOpensAConnectionToTheIntroducedPeerBeforeAnyRead() throws Exception {
        introducedThenRead(EmbeddedSettings.defaults(),
                statistics -> assertThat(statistics.openConnections()).as("pooled connection").isGreaterThanOrEqualTo(1));
    }

    private static void introducedThenRead(TransportSettings transport,
            java.util.function.Consumer<PeerStatistics> introduced) throws Exception {
        byte[] data = TestData.random(4096);
        try (Connector producer = connector("introduced", transport);
             Connector consumer = connector("introducing", transport);
             Descriptor source = new Descriptor(data);
             Descriptor target = Descriptor.allocate(data.length)) {
            ReadableOperation readable = producer.createReadable(source);
            RdmaMetadata metadata = RdmaMetadata.fromJson(readable.metadata().toJson());
            PeerStatistics before = consumer.peerStatistics();
            assertThat(before.cachedPeers()).isZero();
            assertThat(before.openConnections()).isZero();

            consumer.introducePeer(metadata);

            introduced.accept(consumer.peerStatistics());
            assertThat(readable.status()).as("the window is not touched").isEqualTo(OperationStatus.INITIALIZED);
            consumer.introducePeerAsync(metadata).get(30, TimeUnit.SECONDS); // again: nothing more to do
            consumer.read(metadata, target);
            assertThat(target.toByteArray()).isEqualTo(data);
            readable.waitForCompletion(Duration.ofSeconds(30));
            assertThat(consumer.peerStatistics().cachedPeers()).isEqualTo(1);
        }
    }

    @Test
    void metadataTheTransportCannotUseIsRefusedAtOnce() throws Exception {
        try (Connector producer = connector("garbled", EmbeddedSettings.defaults());
             Connector consumer = connector("refusing", EmbeddedSettings.defaults());
             Descriptor source = Descriptor.allocate(64)) {
            ReadableOperation readable = producer.createReadable(source);
            RdmaMetadata good = readable.metadata();
            // Well-formed on the wire, but its agent metadata is not the transport's.
            RdmaMetadata garbled = new RdmaMetadata(good.descriptors(),
                    NixlMetadataCodec.encode("not agent metadata".getBytes(java.nio.charset.StandardCharsets.US_ASCII)),
                    good.notificationKey(), good.operationKind());
            assertThatThrownBy(() -> consumer.introducePeerAsync(garbled)).as("at once, not in the future")
                    .isInstanceOf(TransportFailureException.class)
                    .hasMessageContaining("Peer agent metadata is not from an embedded-transport peer");
            assertThatThrownBy(() -> consumer.introducePeer(null)).isInstanceOf(IllegalArgumentException.class);
            assertThat(consumer.peerStatistics().cachedPeers()).isZero();
            readable.close();
        }
    }

    @Test
    void aClosedConnectorIntroducesNoPeer() throws Exception {
        try (Connector producer = connector("there", EmbeddedSettings.defaults());
             Descriptor source = Descriptor.allocate(64)) {
            ReadableOperation readable = producer.createReadable(source);
            Connector consumer = connector("closed", EmbeddedSettings.defaults());
            consumer.close();
            assertThatThrownBy(() -> consumer.introducePeer(readable.metadata()))
                    .isInstanceOf(ConnectorClosedException.class);
            readable.close();
        }
    }

    @Test
    void aPeerThatCannotBeReachedFailsTheIntroduction() throws Exception {
        RdmaMetadata gone;
        try (Connector producer = connector("gone", EmbeddedSettings.defaults());
             Descriptor source = Descriptor.allocate(64)) {
            ReadableOperation readable = producer.createReadable(source);
            gone = readable.metadata();
            readable.close();
        } // its server is closed: nothing listens there any more
        try (Connector consumer = connector("reaching", EmbeddedSettings.defaults())) {
            CompletableFuture<Void> introduction = consumer.introducePeerAsync(gone);
            assertThatThrownBy(() -> introduction.get(30, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                    .cause().isInstanceOf(TransportFailureException.class)
                    .hasMessageContaining("The embedded transport failed to introduce a peer");
            assertThatThrownBy(() -> consumer.introducePeer(gone)).isInstanceOf(TransportFailureException.class);
        }
    }
}
