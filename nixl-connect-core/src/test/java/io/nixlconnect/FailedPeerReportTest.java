package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.nixlconnect.transport.TransportSettings;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import io.nixlconnect.transport.nixl.NixlDrainLimitForTests;
import io.nixlconnect.transport.nixl.NixlSettings;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 25: an active operation that ends ERRORED or CANCELLED once it has posted its transfer tells the publisher,
 * whose passive operation then ends ERRORED at once, naming the peer and the cause — here long before its own passive
 * timeout of an hour. Without the report the publisher would wait out that hour wherever nothing else tells it: on
 * NIXL always (its C API reports no peer's failure), on the embedded transport when the failed transfer never
 * started on the memory (a refused request; one that still waited for a connection). A reader whose connection drops
 * after it started is seen by the embedded server too, so there the report or the drop may come first.
 *
 * <p>Mid-transfer failures over NIXL need a reader in another JVM over UCX TCP: in one process UCX moves the bytes
 * inside the post (cross-memory attach), before any cancel or timeout could come. The time from the active side's
 * end to the passive side's is printed (a measurement, not asserted).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class FailedPeerReportTest {

    private static final int SIZE = 64 << 20;
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final Duration PASSIVE_TIMEOUT = Duration.ofHours(1);
    private static final String LIBRARY_DIR = System.getenv("NIXL_LIBRARY_DIR");
    private static Duration drainBase;

    @BeforeAll
    static void shortenNixlDrain() {
        // A publisher ended by a report drains its window before its memory may go (the report is the peer's word).
        drainBase = NixlDrainLimitForTests.setBase(Duration.ofMillis(100));
    }

    @AfterAll
    static void restoreNixlDrain() {
        NixlDrainLimitForTests.setBase(drainBase);
    }

    private static TransportSettings transport(String backend) {
        if (backend.equals("nixl")) {
            assumeTrue(LIBRARY_DIR != null && !LIBRARY_DIR.isBlank(),
                    "NIXL_LIBRARY_DIR is not set: run `eval \"$(.ci/nixl-setup.sh)\"` to test against a real NIXL");
            return NixlSettings.defaults().withLibraryDir(Path.of(LIBRARY_DIR));
        }
        return EmbeddedSettings.defaults();
    }

    private static Connector publisher(String backend) {
        return new Connector(ConnectorOptions.builder().workerId("publisher-" + backend).transports(transport(backend))
                .passiveTimeout(PASSIVE_TIMEOUT).build());
    }

    private static Connector peer(String backend, String name, Duration operationTimeout) {
        return new Connector(ConnectorOptions.builder().workerId(name).transports(transport(backend))
                .operationTimeout(operationTimeout).build());
    }

    /** Waits for the passive operation, expecting it ERRORED; returns ms from {@code activeEnded} to its end. */
    private static long passiveEndsErrored(PassiveOperation passive, CompletableFuture<Long> activeEnded, String backend,
            String peerName, String cause) throws Exception {
        CompletableFuture<Long> passiveEnded = endTime(passive);
        Throwable thrown = catchThrowable(() -> passive.waitForCompletion(WAIT));
        assertThat(passive.status()).as("ended long before its passive timeout of an hour").isEqualTo(OperationStatus.ERRORED);
        assertThat(thrown).isInstanceOf(TransferException.class);
        if (backend.equals("nixl")) {
            assertThat(thrown).hasMessageContaining("reported that its transfer ended without notifying")
                    .hasMessageContaining(peerName).hasMessageContaining(cause)
                    .hasMessageNotContaining(passive.notificationKey());
        } else {
            assertThat(thrown.getMessage()).containsAnyOf("reported that its transfer ended without notifying",
                    "dropped before it notified");
        }
        long micros = TimeUnit.NANOSECONDS.toMicros(passiveEnded.get(WAIT.toSeconds(), TimeUnit.SECONDS)
                - activeEnded.get(WAIT.toSeconds(), TimeUnit.SECONDS));
        System.out.printf("FailedPeerReportTest [%s]: %s ended ERRORED %.1f ms after its peer's operation ended (%s)%n",
                backend, passive.getClass().getSimpleName(), micros / 1000.0, thrown.getMessage());
        return micros;
    }

    /** When the operation ends (a completion stage's time: a little after its waiters wake). */
    private static CompletableFuture<Long> endTime(Operation operation) {
        return operation.completion().handle((ok, error) -> System.nanoTime());
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"embedded"})
    void aReaderThatTimesOutMidReadEndsTheReadableErroredAtOnce(String backend) throws Exception {
        try (Connector publisher = publisher(backend);
             Connector reader = peer(backend, "timed-out-reader-" + backend, Duration.ofMillis(1));
             Descriptor source = Descriptor.allocate(SIZE);
             Descriptor target = Descriptor.allocate(SIZE)) {
            ReadableOperation readable = publisher.createReadable(source);
            ReadOperation read = reader.beginRead(readable.metadata(), target);
            CompletableFuture<Long> readEnded = endTime(read);
            assertThatThrownBy(() -> read.waitForCompletion(WAIT)).isInstanceOf(TransferTimeoutException.class);

            passiveEndsErrored(readable, readEnded, backend, "timed-out-reader-" + backend, "operation timeout");
            assertThat(publisher.registeredBytes()).as("registrations released").isZero();
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"embedded"})
    void aReaderCancelledMidReadEndsTheReadableErroredAtOnce(String backend) throws Exception {
        try (Connector publisher = publisher(backend);
             Connector reader = peer(backend, "cancelling-reader-" + backend, Duration.ofSeconds(30));
             Descriptor source = Descriptor.allocate(SIZE);
             Descriptor target = Descriptor.allocate(SIZE)) {
            ReadableOperation readable = publisher.createReadable(source);
            ReadOperation read = reader.beginRead(readable.metadata(), target);
            CompletableFuture<Long> readEnded = endTime(read);
            read.cancel();
            assertThat(read.status()).as("64 MiB do not move in the moment between begin and cancel")
                    .isEqualTo(OperationStatus.CANCELLED);

            passiveEndsErrored(readable, readEnded, backend, "cancelling-reader-" + backend, "was cancelled");
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"embedded"})
    void aWriterThatTimesOutMidWriteEndsTheWritableErroredAtOnce(String backend) throws Exception {
        try (Connector publisher = publisher(backend);
             Connector writer = peer(backend, "timed-out-writer-" + backend, Duration.ofMillis(1));
             Descriptor target = Descriptor.allocate(SIZE);
             Descriptor source = Descriptor.allocate(SIZE)) {
            WritableOperation writable = publisher.createWritable(target);
            WriteOperation write = writer.beginWrite(source, writable.metadata());
            CompletableFuture<Long> writeEnded = endTime(write);
            assertThatThrownBy(() -> write.waitForCompletion(WAIT)).isInstanceOf(TransferTimeoutException.class);

            passiveEndsErrored(writable, writeEnded, backend, "timed-out-writer-" + backend, "operation timeout");
        }
    }

    /** The readable's metadata with its descriptor moved past the published memory: the peer refuses the request. */
    private static RdmaMetadata pointingOutside(RdmaMetadata metadata) {
        SerializedDescriptor published = metadata.descriptors().get(0);
        return RdmaMetadata.of(List.of(new SerializedDescriptor(published.device(), published.ptr() + (1L << 40),
                published.size())), metadata.decodeNixlMetadata(), metadata.notificationKey(), metadata.operationKind());
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"embedded", "nixl"})
    void aReaderWhoseRequestThePeerRefusesEndsTheReadableErroredAtOnce(String backend) throws Exception {
        try (Connector publisher = publisher(backend);
             Connector reader = peer(backend, "refused-reader-" + backend, Duration.ofSeconds(30));
             Descriptor source = new Descriptor(TestData.random(4096));
             Descriptor target = Descriptor.allocate(4096)) {
            ReadableOperation readable = publisher.createReadable(source);
            ReadOperation read = reader.beginRead(pointingOutside(readable.metadata()), target);
            CompletableFuture<Long> readEnded = endTime(read);
            assertThatThrownBy(() -> read.waitForCompletion(WAIT)).isInstanceOf(TransferException.class);
            assertThat(read.status()).isEqualTo(OperationStatus.ERRORED);

            passiveEndsErrored(readable, readEnded, backend, "refused-reader-" + backend, "failed");
            assertThat(readable.failure()).as("nothing but the report tells the publisher of a refused request")
                    .hasMessageContaining("reported that its transfer ended without notifying");
        }
    }

    /** A fan-out readable outlives one reader's failure (another may still come), as for a reader's lost connection. */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"embedded", "nixl"})
    void aFanOutReadableWaitsForItsOtherReadersWhenOneReportsAFailure(String backend) throws Exception {
        try (Connector publisher = publisher(backend);
             Connector failing = peer(backend, "failing-fan-out-reader-" + backend, Duration.ofSeconds(30));
             Connector reader = peer(backend, "fan-out-reader-" + backend, Duration.ofSeconds(30));
             Descriptor source = new Descriptor(TestData.random(4096));
             Descriptor failed = Descriptor.allocate(4096);
             Descriptor target = Descriptor.allocate(4096)) {
            ReadableOperation readable = publisher.createReadable(2, source);
            ReadOperation doomed = failing.beginRead(pointingOutside(readable.metadata()), failed);
            assertThatThrownBy(() -> doomed.waitForCompletion(WAIT)).isInstanceOf(TransferException.class);
            assertThatThrownBy(() -> readable.waitForCompletion(Duration.ofMillis(500)))
                    .as("another reader may still come").isInstanceOf(WaitTimeoutException.class);
            assertThat(readable.status()).isEqualTo(OperationStatus.INITIALIZED);

            reader.beginRead(readable.metadata(), target).waitForCompletion(WAIT);
            reader.beginRead(readable.metadata(), target).waitForCompletion(WAIT);
            readable.waitForCompletion(WAIT);
            assertThat(readable.readsCompleted()).isEqualTo(2);
            assertThat(target.toByteArray()).isEqualTo(source.toByteArray());
        }
    }

    private static long epochMicros() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
    }

    /**
     * Over NIXL with the peer in another JVM (UCX over TCP, so the bytes take long enough to be cut off): a reader
     * that times out mid-read, one cancelled mid-read, a writer that times out mid-write. {@code command} is what the
     * peer runs ({@link #main}).
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"read-timeout", "read-cancel", "write-timeout"})
    void aPeerThatFailsMidTransferInAnotherJvmEndsTheNixlPassiveOperationErroredAtOnce(String command) throws Exception {
        transport("nixl");
        long size = 256L << 20;
        // The peer outlives the publisher's window. Over TCP the publisher's UCX goes on serving the abandoned GET
        // (256 MiB) in the background, and a reader that disconnects meanwhile makes UCX 1.23 abort the publisher
        // (stubs.c:107 or "unexpected error": docs/reliability.md), which is not what this test is about. Closed in
        // reverse order: the memory (the caller's, so close() waits out the window's drain limit, 2.8 s: by then
        // UCX has sent the rest), the publisher, then the peer.
        try (PeerLines peer = PeerLines.startJvmOverUcxTcp(FailedPeerReportTest.class, "peer", LIBRARY_DIR);
             Connector publisher = publisher("nixl");
             Descriptor memory = new Descriptor(ByteBuffer.allocateDirect((int) size))) {
            peer.next("READY");
            PassiveOperation passive = command.startsWith("read") ? publisher.createReadable(memory)
                    : publisher.createWritable(memory);
            CompletableFuture<Long> passiveEnded = passive.completion().handle((ok, error) -> epochMicros());

            peer.send(command + " " + passive.metadata().toJson());
            String[] ended = peer.next("ENDED ").split(" ");
            assertThat(ended[1]).as("the peer's operation, 256 MiB over TCP cut off").isEqualTo(
                    command.endsWith("cancel") ? "CANCELLED" : "ERRORED");

            Throwable thrown = catchThrowable(() -> passive.waitForCompletion(WAIT));
            assertThat(passive.status()).as("ended long before its passive timeout of an hour")
                    .isEqualTo(OperationStatus.ERRORED);
            assertThat(thrown).hasMessageContaining("the peer '" + ended[3] + "-1' reported that its transfer ended "
                    + "without notifying").hasMessageContaining(command.endsWith("cancel") ? "was cancelled" : "operation timeout");
            double ms = (passiveEnded.get(WAIT.toSeconds(), TimeUnit.SECONDS) - Long.parseLong(ended[2])) / 1000.0;
            System.out.printf("FailedPeerReportTest [nixl, %s, peer JVM over UCX TCP]: %s ended ERRORED %.1f ms after "
                    + "its peer's operation ended (%s)%n", command, passive.getClass().getSimpleName(), ms, thrown.getMessage());
        }
    }

    /** {@code peer LIBRARY_DIR}: the other JVM of the test above, driven over stdin. */
    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        String name = "peer-" + ProcessHandle.current().pid();
        // The cancelling reader's connector has a long timeout: at 20 ms, loading the peer on a loaded machine could
        // already time the read out (ERRORED) before cancel() runs.
        try (Connector timingOut = new Connector(ConnectorOptions.builder().workerId(name)
                .transports(NixlSettings.defaults().withLibraryDir(Path.of(args[1])))
                .operationTimeout(Duration.ofMillis(20)).build());
             Connector cancelling = new Connector(ConnectorOptions.builder().workerId(name + "-cancelling")
                .transports(NixlSettings.defaults().withLibraryDir(Path.of(args[1])))
                .operationTimeout(Duration.ofSeconds(60)).build());
             BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            out.println("READY");
            String line;
            while ((line = in.readLine()) != null) {
                String[] words = line.trim().split("\\s+", 2);
                if (words[0].equals("exit")) {
                    return;
                }
                RdmaMetadata metadata = RdmaMetadata.fromJson(words[1]);
                Descriptor local = Descriptor.allocate(metadata.totalSize());
                boolean cancel = words[0].equals("read-cancel");
                Connector connector = cancel ? cancelling : timingOut;
                ActiveOperation operation = words[0].startsWith("read") ? connector.beginRead(metadata, local)
                        : connector.beginWrite(local, metadata);
                if (cancel) {
                    operation.cancel();
                }
                String worker = connector.name();
                operation.completion().whenComplete((ok, error) ->
                        out.println("ENDED " + operation.status().name() + " " + epochMicros() + " " + worker));
            }
        }
    }

    /** A reader that completes tells nothing more: the publisher completes as ever. */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"embedded", "nixl"})
    void aReaderThatCompletesLeavesTheReadableComplete(String backend) throws Exception {
        try (Connector publisher = publisher(backend);
             Connector reader = peer(backend, "reader-" + backend, Duration.ofSeconds(30));
             Descriptor source = new Descriptor(TestData.random(4096));
             Descriptor target = Descriptor.allocate(4096)) {
            ReadableOperation readable = publisher.createReadable(source);
            ReadOperation read = reader.beginRead(readable.metadata(), target);
            read.waitForCompletion(WAIT);
            read.cancel(); // no effect once COMPLETE: nothing is reported
            readable.waitForCompletion(WAIT);
            assertThat(readable.status()).isEqualTo(OperationStatus.COMPLETE);
        }
    }
}
