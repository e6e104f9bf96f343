package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.nixlconnect.transport.nixl.NixlDrainLimitForTests;
import io.nixlconnect.transport.nixl.NixlSettings;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The transfer contract over NIXL. Runs when {@code NIXL_LIBRARY_DIR} points at a NIXL install (CI sets it up
 * with {@code .ci/nixl-setup.sh}); skipped, with the reason, otherwise.
 */
@Tag(TestTags.NIXL)
class NixlTransferContractTest extends TransferContractTest {

    private static final String LIBRARY_DIR = System.getenv("NIXL_LIBRARY_DIR");

    @BeforeAll
    static void requireNixl() {
        assumeTrue(LIBRARY_DIR != null && !LIBRARY_DIR.isBlank(),
                "NIXL_LIBRARY_DIR is not set: run `eval \"$(.ci/nixl-setup.sh)\"` to test against a real NIXL");
    }

    @Override
    ConnectorOptions.Builder options() {
        return ConnectorOptions.builder().transports(NixlSettings.defaults().withLibraryDir(Path.of(LIBRARY_DIR)));
    }

    /** With several backends NIXL chooses per transfer; the operation says which (here UCX, the second listed). */
    @Test
    void theBackendNixlChoseAmongSeveralIsReported() {
        List<String> backends = List.of("POSIX", "UCX"); // POSIX moves files, not memory between agents
        NixlSettings settings = NixlSettings.defaults().withLibraryDir(Path.of(LIBRARY_DIR)).withBackends(backends);
        try (Connector a = new Connector(ConnectorOptions.builder().workerId("two-backends-a").transports(settings).build());
             Connector b = new Connector(ConnectorOptions.builder().workerId("two-backends-b").transports(settings).build());
             Descriptor source = new Descriptor(TestData.random(4096));
             Descriptor target = Descriptor.allocate(4096)) {
            ReadableOperation readable = a.createReadable(source);
            ReadOperation read = b.beginRead(readable.metadata(), target);
            read.waitForCompletion(Duration.ofSeconds(30));
            assertThat(read.attributes().backend()).isEqualTo("UCX");
            assertThat(b.transportStatus().details()).containsEntry("transfersByBackend", Map.of("UCX", 1L));
            readable.waitForCompletion(Duration.ofSeconds(30));
        }
    }

    /**
     * Issue 12 item 2: valid JSON whose agent metadata carries an out-of-range memory type used to crash
     * this JVM inside nixl_capi_load_remote_md (nixlMemSection::emplace); now it is refused before NIXL.
     */
    @ParameterizedTest(name = "memory type {0}")
    @ValueSource(ints = {0xfb000000, 0xff, 0x7fffffff, 5})
    void agentMetadataWithAnOutOfRangeMemoryTypeIsRefusedBeforeNixl(int memoryType) {
        try (Descriptor source = new Descriptor(new byte[64]); Descriptor target = Descriptor.allocate(64);
             ReadableOperation readable = producer.createReadable(source)) {
            RdmaMetadata real = readable.metadata();
            byte[] blob = NixlMetadataCodec.decode(real.nixlMetadata(), 1 << 24);
            byte[] marker = "nixlSDList|t".getBytes(StandardCharsets.US_ASCII);
            int at = indexOf(blob, marker) + marker.length + Long.BYTES;
            ByteBuffer.wrap(blob, at, 4).order(ByteOrder.LITTLE_ENDIAN).putInt(memoryType);
            RdmaMetadata hostile = RdmaMetadata.of(real.descriptors(), blob, real.notificationKey(), real.operationKind());
            assertThatThrownBy(() -> consumer.beginRead(hostile, target))
                    .isInstanceOf(InvalidMetadataException.class)
                    .hasMessageContaining("MemSection[0].t")
                    .satisfies(e -> assertThat(((InvalidMetadataException) e).field()).isEqualTo("nixl_metadata"));
            assertThat(consumer.remoteAgentCount()).isZero();
            // The real metadata still works afterwards.
            consumer.beginRead(real, target).waitForCompletion(WAIT);
        }
    }

    /**
     * Issue 12 item 1: a readable closed before any peer completed it may still be read over UCX TCP, so its
     * memory stays registered until the transport releases it; closing the connector (which destroys the agent,
     * and UCX's worker with it) releases it at once. Over memory the caller owns (it frees it next) the
     * descriptor's close waits until then; over memory the library owns it returns at once (issue 22 item 3: an
     * aborted request cost its closer 2 s) and the library frees the memory once released.
     */
    @Test
    void descriptorCloseWaitsForTheDrainOfAnEarlyClosedReadableOverCallerMemoryOnly() throws Exception {
        ByteBuffer callers = ByteBuffer.allocateDirect(4096);
        Descriptor borrowed = new Descriptor(callers);
        Descriptor owned = Descriptor.allocate(4096);
        ReadableOperation overBorrowed = producer.createReadable(borrowed);
        ReadableOperation overOwned = producer.createReadable(owned);
        overBorrowed.close();
        overOwned.close();
        assertThat(overBorrowed.status()).isEqualTo(OperationStatus.CANCELLED);
        owned.close(); // returns while draining: on the thread of a caller that must not wait for it
        assertThat(producer.registeredBytes()).as("both still registered while draining").isEqualTo(8192);
        CompletableFuture<Void> closed = CompletableFuture.runAsync(borrowed::close);
        Thread.sleep(300);
        assertThat(closed).as("Descriptor.close() over the caller's memory waits while a peer may still be reading")
                .isNotDone();
        producer.close();
        closed.get(10, TimeUnit.SECONDS);
        assertThat(producer.registeredBytes()).isZero();
    }

    /**
     * Past the drain limit a stalled peer could still reach the memory over UCX TCP: the agent holds it from
     * that moment, whether or not the descriptor is ever closed (its memory must not be garbage-collected
     * either), and counts it once; closing the descriptor then returns without freeing it.
     */
    @Test
    void memoryOfAReadableReleasedAtTheDrainLimitIsHeldByTheAgentUntilTheConnectorCloses() throws Exception {
        Duration base = NixlDrainLimitForTests.setBase(Duration.ofMillis(100));
        try {
            Descriptor source = Descriptor.allocate(4096);
            ReadableOperation readable = producer.createReadable(source);
            readable.close();
            await().atMost(Duration.ofSeconds(10)).until(() -> keptBytes() != 0);
            assertThat(keptBytes()).as("held from the drain limit, before any close").isEqualTo(4096L);
            assertThat(producer.registeredBytes()).as("deregistered at the drain limit").isZero();
            source.close(); // returns: the memory goes to the agent instead of being freed
            assertThat(keptBytes()).as("counted once").isEqualTo(4096L);
        } finally {
            NixlDrainLimitForTests.setBase(base);
        }
    }

    /**
     * A KV pool whose slices are published per request, requests aborted: the agent keeps the pool reachable past the
     * drain limits once, not once per slice (a service running for weeks would otherwise pile up a holder per aborted
     * block).
     */
    @Test
    void slicesOfAPoolReleasedAtTheirDrainLimitsHoldThePoolOnce() throws Exception {
        Duration base = NixlDrainLimitForTests.setBase(Duration.ofMillis(100));
        try (Descriptor pool = Descriptor.allocate(64 * 4096)) {
            for (int request = 0; request < 4; request++) {
                List<Descriptor> blocks = new java.util.ArrayList<>();
                for (int block = 0; block < 16; block++) {
                    blocks.add(pool.slice((long) (request * 16 + block) * 4096, 4096));
                }
                producer.createReadable(blocks).close(); // the client went away
                blocks.forEach(Descriptor::close);
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (keptBytes() < 4 * 16 * 4096L && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertThat(keptBytes()).isEqualTo(4 * 16 * 4096L);
            assertThat(producer.transportStatus().details().get("memoryHeldUntilClose")).isEqualTo(1);
        } finally {
            NixlDrainLimitForTests.setBase(base);
        }
    }

    private long keptBytes() {
        return ((Number) producer.transportStatus().details().get("bytesKeptAfterDrainLimit")).longValue();
    }

    private static int indexOf(byte[] data, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= data.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (data[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return i;
        }
        throw new AssertionError("marker not found");
    }
}
