package io.nixlconnect;

import io.nixlconnect.transport.nixl.NixlSettings;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Interoperability with the REAL {@code dynamo.nixl_connect} that Dynamo's users run (ai-dynamo-runtime
 * 1.6.1, fetched from PyPI by {@code .ci/dynamo-setup.sh}), driven through its public API by
 * {@code interop/dynamo_peer.py}: Java passive operations completed by the module's active ones and the other
 * way round, READ and WRITE, b64 and hex metadata, one descriptor, zero-length ones and 1,024-block lists, a
 * fan-out readable read by several Python readers, and a Python reader killed mid-read.
 *
 * <p>Where {@code torch} is not installed the peer puts a minimal import stand-in on the path
 * ({@code interop/torch_stand_in/}: the module imports torch but uses it only for isinstance checks).
 * Needs {@code NIXL_LIBRARY_DIR} and {@code NIXL_PYTHON_PATH} ({@code .ci/nixl-setup.sh}) and
 * {@code DYNAMO_PYTHON_PATH} ({@code .ci/dynamo-setup.sh}); skipped without them, except under {@code CI=true},
 * where a missing piece fails the test. One Python peer serves the whole class; two more join the fan-out
 * test and one more is killed, to keep CI's Python start-ups few.
 */
@Tag(TestTags.PYTHON_INTEROP)
@Tag(TestTags.CROSS_PROCESS)
@Tag(TestTags.NIXL)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class DynamoInteropTest {

    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final String LIBRARY_DIR = System.getenv("NIXL_LIBRARY_DIR");
    private static final String NIXL_PYTHON_PATH = System.getenv("NIXL_PYTHON_PATH");
    private static final String DYNAMO_PYTHON_PATH = System.getenv("DYNAMO_PYTHON_PATH");
    private static final boolean CI = "true".equals(System.getenv("CI"));

    private static PeerLines peer;
    private static Connector connector;
    private final List<Descriptor> owned = new ArrayList<>();

    /** Skips outside CI; fails in CI, which must run the real-module interop tests. */
    private static void require(boolean condition, String reason) {
        if (!condition && CI) {
            fail("CI must test against the real dynamo.nixl_connect, but " + reason);
        }
        assumeTrue(condition, reason);
    }

    @BeforeAll
    static void startDynamoPeer() throws Exception {
        require(LIBRARY_DIR != null && !LIBRARY_DIR.isBlank(),
                "NIXL_LIBRARY_DIR is not set: run `source .ci-cache/nixl/env.sh` after .ci/nixl-setup.sh");
        require(NIXL_PYTHON_PATH != null && !NIXL_PYTHON_PATH.isBlank(),
                "NIXL_PYTHON_PATH is not set (NIXL's Python package): run .ci/nixl-setup.sh");
        require(DYNAMO_PYTHON_PATH != null && !DYNAMO_PYTHON_PATH.isBlank(),
                "DYNAMO_PYTHON_PATH is not set: run `eval \"$(.ci/dynamo-setup.sh)\"` to fetch dynamo.nixl_connect 1.6.1");
        peer = startPeer("the dynamo.nixl_connect peer");
        connector = new Connector(ConnectorOptions.builder().workerId("java-dynamo-interop")
                .transports(NixlSettings.defaults().withLibraryDir(Path.of(LIBRARY_DIR)))
                .operationTimeout(Duration.ofSeconds(30)).build());
    }

    @AfterAll
    static void stopDynamoPeer() throws Exception {
        if (connector != null) {
            connector.close();
        }
        if (peer != null) {
            peer.close();
        }
    }

    @AfterEach
    void release() {
        owned.forEach(Descriptor::close);
    }

    static PeerLines startPeer(String name) throws Exception {
        String python = System.getenv().getOrDefault("NIXL_PYTHON", "python3");
        ProcessBuilder builder = new ProcessBuilder(python, "-u", findScript().toString());
        builder.environment().put("PYTHONPATH", NIXL_PYTHON_PATH + java.io.File.pathSeparator + DYNAMO_PYTHON_PATH);
        PeerLines started = PeerLines.start(builder, name);
        assertThat(started.next("READY")).startsWith("READY dynamo-peer ");
        return started;
    }

    /** The driver lives in {@code interop/} at the repository root; tests run in the module folder. */
    private static Path findScript() {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path candidate = dir.resolve("interop").resolve("dynamo_peer.py");
            if (Files.isRegularFile(candidate)) {
                return candidate;
            }
        }
        throw new IllegalStateException("interop/dynamo_peer.py not found above " + Path.of("").toAbsolutePath());
    }

    private static long crc(List<Descriptor> descriptors) {
        CRC32 crc = new CRC32(); // zlib.crc32 on the Python side
        for (Descriptor descriptor : descriptors) {
            crc.update(descriptor.toByteArray());
        }
        return crc.getValue();
    }

    private static byte[] data(long seed, int size) {
        byte[] bytes = new byte[size];
        SplittableRandom random = new SplittableRandom(seed);
        for (int i = 0; i < size; i++) {
            bytes[i] = (byte) random.nextInt(256);
        }
        return bytes;
    }

    private Descriptor own(Descriptor descriptor) {
        owned.add(descriptor);
        return descriptor;
    }

    /** {@code count} descriptors of {@code size} bytes: slices of one registration, filled from {@code seed}. */
    private List<Descriptor> blocks(int count, int size, long seed) {
        Descriptor whole = own(Descriptor.allocate((long) count * size));
        whole.asByteBuffer().put(data(seed, count * size));
        List<Descriptor> blocks = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            blocks.add(whole.slice((long) i * size, size));
        }
        return blocks;
    }

    private List<Descriptor> sized(List<Integer> sizes, long seed) {
        List<Descriptor> descriptors = new ArrayList<>();
        for (int size : sizes) {
            descriptors.add(own(new Descriptor(data(seed++, size))));
        }
        return descriptors;
    }

    private List<Descriptor> targetsFor(RdmaMetadata metadata) {
        List<Descriptor> targets = new ArrayList<>();
        for (SerializedDescriptor remote : metadata.descriptors()) {
            targets.add(own(Descriptor.allocate(remote.size())));
        }
        return targets;
    }

    private void javaReadsPythonReadable(String sizes, boolean hex) throws Exception {
        peer.send("readable " + sizes + " 11" + (hex ? " hex" : ""));
        long expectedCrc = Long.parseLong(peer.next("DATA ").substring(5));
        RdmaMetadata metadata = RdmaMetadata.fromJson(peer.next("META ").substring(5));
        assertThat(metadata.nixlMetadata().startsWith("b64:")).as("b64 form").isEqualTo(!hex);
        List<Descriptor> targets = targetsFor(metadata);

        connector.beginRead(metadata, targets).waitForCompletion(WAIT);

        assertThat(peer.next("DONE ")).isEqualTo("DONE " + metadata.notificationKey() + " COMPLETE");
        assertThat(crc(targets)).as("bytes read from the module's readable, sizes %s", sizes).isEqualTo(expectedCrc);
    }

    @Test
    void javaReadsTheModulesReadableWithB64AndHexMetadata() throws Exception {
        javaReadsPythonReadable(String.valueOf(1 << 20), false);
        javaReadsPythonReadable("4096,0,65536", true); // a zero-length descriptor: the module registers it
    }

    @Test
    void javaReadsAThousandBlockReadableOfTheModule() throws Exception {
        javaReadsPythonReadable("1024x4096", false);
    }

    private void moduleReads(List<Descriptor> descriptors, boolean hex) throws Exception {
        ReadableOperation readable = connector.createReadable(descriptors);
        RdmaMetadata metadata = hex ? readable.hexEncodedMetadata() : readable.metadata();

        peer.send("read " + metadata.toJson());

        assertThat(peer.next("READ ")).isEqualTo("READ " + readable.notificationKey() + " COMPLETE " + crc(descriptors));
        readable.waitForCompletion(WAIT);
        assertThat(readable.status()).isEqualTo(OperationStatus.COMPLETE);
    }

    @Test
    void theModuleReadsJavaReadablesWithB64AndHexMetadata() throws Exception {
        moduleReads(sized(List.of(1 << 20), 3), false);
        moduleReads(sized(List.of(4096, 65536), 4), true);
        moduleReads(blocks(1024, 4096, 5), false);
    }

    private void javaWrites(String sizes, List<Descriptor> sources) throws Exception {
        peer.send("writable " + sizes);
        RdmaMetadata metadata = RdmaMetadata.fromJson(peer.next("META ").substring(5));
        assertThat(metadata.operationKind()).isEqualTo(OperationKind.WRITE);

        connector.beginWrite(sources, metadata).waitForCompletion(WAIT);

        assertThat(peer.next("WRITTEN ")).isEqualTo("WRITTEN " + metadata.notificationKey() + " COMPLETE " + crc(sources));
    }

    @Test
    void javaWritesIntoTheModulesWritables() throws Exception {
        javaWrites("100000", sized(List.of(100000), 6));
        javaWrites("4096,0,100000", sized(List.of(4096, 0, 100000), 7));
        javaWrites("1024x4096", blocks(1024, 4096, 8));
    }

    private void moduleWrites(String sizes, List<Descriptor> targets) throws Exception {
        WritableOperation writable = connector.createWritable(targets);

        peer.send("write " + sizes + " 5 " + writable.metadata().toJson());

        String wrote = peer.next("WROTE ");
        assertThat(wrote).startsWith("WROTE " + writable.notificationKey() + " COMPLETE ");
        writable.waitForCompletion(WAIT);
        assertThat(crc(targets)).isEqualTo(Long.parseLong(wrote.substring(wrote.lastIndexOf(' ') + 1)));
    }

    @Test
    void theModuleWritesIntoJavaWritables() throws Exception {
        moduleWrites("8192", List.of(own(Descriptor.allocate(8192))));
        moduleWrites("4096,100", List.of(own(Descriptor.allocate(4096)), own(Descriptor.allocate(100))));
        moduleWrites("1024x4096", blocks(1024, 4096, 0));
    }

    @Test
    void severalModuleReadersTakePartInAFanOutReadable() throws Exception {
        List<Descriptor> source = sized(List.of(1 << 20), 21);
        ReadableOperation readable = connector.createReadable(3, source);
        String json = readable.metadata().toJson();
        try (PeerLines second = startPeer("a second dynamo.nixl_connect reader");
                PeerLines third = startPeer("a third dynamo.nixl_connect reader")) {
            for (PeerLines reader : List.of(peer, second, third)) {
                reader.send("read " + json);
            }
            for (PeerLines reader : List.of(peer, second, third)) {
                assertThat(reader.next("READ ")).isEqualTo("READ " + readable.notificationKey() + " COMPLETE " + crc(source));
            }
            readable.waitForCompletion(WAIT);
        }
        assertThat(readable.readsCompleted()).isEqualTo(3);
    }

    @Test
    void xpuNamedDescriptorsParseAlikeOnBothSides() throws Exception {
        // No XPU here to move bytes from: the wire form is what both sides must agree on.
        String agentMetadata;
        try (ReadableOperation readable = connector.createReadable(sized(List.of(16), 13))) {
            agentMetadata = readable.metadata().nixlMetadata();
        }
        String json = "{\"descriptors\":[{\"device\":\" XPU:1 \",\"ptr\":4096,\"size\":0},"
                + "{\"device\":\"xpu\",\"ptr\":8192,\"size\":16},{\"device\":\"cuda:2\",\"ptr\":12288,\"size\":16},"
                + "{\"device\":\"cpu\",\"ptr\":16384,\"size\":16}],\"nixl_metadata\":\"" + agentMetadata + "\","
                + "\"notification_key\":\"k\",\"operation_kind\":1}";

        peer.send("parse " + json);

        String parsed = peer.next("PARSED ");
        assertThat(parsed).startsWith("PARSED XPU:1,XPU:0,CUDA:2,HOST:0 ");
        RdmaMetadata javaParsed = RdmaMetadata.fromJson(json);
        assertThat(javaParsed.descriptors()).extracting(d -> Device.of(d.device()).toString())
                .containsExactly("xpu:1", "xpu:0", "cuda:2", "cpu");
        assertThat(javaParsed.toJson()).as("the module's re-serialised form").isEqualTo(parsed.substring(parsed.indexOf(' ', 7) + 1));
    }

    @Test
    void cancelOnACompletedModuleReadFlipsItToCancelledAfterJavaCompleted() throws Exception {
        List<Descriptor> source = sized(List.of(4096), 9);
        ReadableOperation readable = connector.createReadable(source);

        peer.send("cancelread " + readable.metadata().toJson());

        assertThat(peer.next("CANCELLED ")).isEqualTo("CANCELLED " + readable.notificationKey() + " COMPLETE CANCELLED");
        readable.waitForCompletion(WAIT);
        assertThat(readable.status()).isEqualTo(OperationStatus.COMPLETE);
    }

    @Test
    void javaNamesTheHostAndComparesByWorkerIdAsTheModuleDoes() throws Exception {
        peer.send("info");
        String[] info = peer.next("INFO ").split(" ");
        assertThat(info[3]).as("Python: Connector == Connector of the same worker id").isEqualTo("True");
        assertThat(connector.hostname()).as("Python's socket.gethostname()").isEqualTo(info[1]);
        try (Connector same = new Connector(ConnectorOptions.builder().workerId("java-dynamo-interop")
                .transports(NixlSettings.defaults().withLibraryDir(Path.of(LIBRARY_DIR))).build())) {
            assertThat(same.sameWorker(connector)).isTrue();
        }
    }

    @Test
    void aModuleReaderKilledMidReadLeavesTheJavaReadableToItsPassiveTimeout() throws Exception {
        Duration passiveTimeout = Duration.ofSeconds(3);
        try (Connector publisher = new Connector(ConnectorOptions.builder().workerId("java-dynamo-killed")
                .transports(NixlSettings.defaults().withLibraryDir(Path.of(LIBRARY_DIR)))
                .passiveTimeout(passiveTimeout).build());
                PeerLines doomed = startPeer("a dynamo.nixl_connect reader to be killed")) {
            Descriptor source = own(Descriptor.allocate(128 << 20));
            ReadableOperation readable = publisher.createReadable(source);

            doomed.send("readpost " + readable.metadata().toJson());
            assertThat(doomed.next("POSTED ")).startsWith("POSTED " + readable.notificationKey());
            long killedAt = System.nanoTime();
            doomed.process().destroyForcibly();
            assertThat(doomed.process().waitFor(30, TimeUnit.SECONDS)).isTrue();

            Throwable thrown = catchThrowable(() -> readable.waitForCompletion(WAIT));
            long endedMs = (System.nanoTime() - killedAt) / 1_000_000;
            // NIXL's C API reports no peer's death: the notification never comes and the passive timeout ends it,
            // unless the 128 MiB landed (and the module's notification with them) before the kill.
            System.out.printf("DynamoInteropTest: reader killed mid-read; the Java readable ended %s %d ms after the kill%n",
                    readable.status(), endedMs);
            if (readable.status() == OperationStatus.ERRORED) {
                assertThat(thrown).isInstanceOf(TransferTimeoutException.class)
                        .hasMessageContaining("passive timeout of " + passiveTimeout);
            } else {
                assertThat(readable.status()).isEqualTo(OperationStatus.COMPLETE);
            }
            // Its memory stays allocated until the publisher's agent closes (a stalled peer could still reach it).
        }
        // The shared peer and connector are unaffected.
        moduleReads(sized(List.of(4096), 10), false);
    }

    /**
     * Issue 25: a Java reader that fails tells the publisher with a failure report (a NIXL notification that is not
     * the key). The module's passive operation matches only its exact key: it ignores the report (which it decodes as
     * UTF-8 with every notification: a malformed one would make its status check raise) and completes when a
     * reader's real notification comes. The report is there among its notifications all the same.
     */
    @Test
    void theModulesReadableIgnoresAJavaReadersFailureReportAndStillCompletes() throws Exception {
        peer.send("readable " + (1 << 20) + " 17");
        long expectedCrc = Long.parseLong(peer.next("DATA ").substring(5));
        RdmaMetadata metadata = RdmaMetadata.fromJson(peer.next("META ").substring(5));
        SerializedDescriptor published = metadata.descriptors().get(0);
        RdmaMetadata outside = RdmaMetadata.of(List.of(new SerializedDescriptor(published.device(),
                published.ptr() + (1L << 40), published.size())), metadata.decodeNixlMetadata(),
                metadata.notificationKey(), metadata.operationKind());
        List<Descriptor> targets = targetsFor(metadata);

        ReadOperation refused = connector.beginRead(outside, targets);
        assertThat(catchThrowable(() -> refused.waitForCompletion(WAIT))).isInstanceOf(TransferException.class);
        assertThat(refused.status()).isEqualTo(OperationStatus.ERRORED); // ... and the module's agent was told

        connector.beginRead(metadata, targets).waitForCompletion(WAIT);

        assertThat(peer.next("DONE ")).isEqualTo("DONE " + metadata.notificationKey() + " COMPLETE");
        assertThat(crc(targets)).isEqualTo(expectedCrc);
        peer.send("notifs");
        assertThat(peer.next("NOTIFS ")).as("the report reached the module's agent, which ignored it")
                .matches("NOTIFS [1-9].*").contains("nixl-connect:failed:v1:" + metadata.notificationKey()
                        + " / ReadOperation of worker 'java-dynamo-interop' failed: ");
    }

    /** Notifications and failure reports the NIXL agent has taken in (health detail {@code notificationsReceived}). */
    private static long notificationsReceived() {
        return ((Number) connector.transportStatus().details().get("notificationsReceived")).longValue();
    }

    /** The NIXL agent's count of failure reports that ended no operation (health detail {@code failureReportsDropped}). */
    private static long failureReportsDropped() {
        return ((Number) connector.transportStatus().details().get("failureReportsDropped")).longValue();
    }

    /**
     * The other order: the module's reader completed (its notification came first, the Java readable is DONE), then a
     * failure report for the same key arrives late. DONE stays DONE; the report ends nothing, and is dropped and
     * counted. ({@code failreport} never posts a transfer: it only sends the report.)
     */
    @Test
    void aLateFailureReportAfterTheModulesReadCompletedLeavesTheJavaReadableDoneAndIsCounted() throws Exception {
        List<Descriptor> source = sized(List.of(4096), 23);
        ReadableOperation readable = connector.createReadable(source);
        String json = readable.metadata().toJson();
        peer.send("read " + json);
        assertThat(peer.next("READ ")).isEqualTo("READ " + readable.notificationKey() + " COMPLETE " + crc(source));
        readable.waitForCompletion(WAIT);
        assertThat(readable.status()).isEqualTo(OperationStatus.COMPLETE);
        long droppedBefore = failureReportsDropped();

        peer.send("failreport " + json);

        assertThat(peer.next("REPORTED ")).isEqualTo("REPORTED " + readable.notificationKey() + " CANCELLED");
        await().atMost(WAIT).until(() -> failureReportsDropped() > droppedBefore);
        assertThat(failureReportsDropped()).isEqualTo(droppedBefore + 1);
        assertThat(readable.status()).isEqualTo(OperationStatus.COMPLETE);
        assertThat(readable.completion()).isCompleted();
        // The agent still serves: the shared peer reads the next readable.
        moduleReads(sized(List.of(4096), 24), false);
    }

    /**
     * The other way: the module's readers send no failure report (a Python reader that fails leaves a Java publisher
     * to its passive timeout, as {@link #aModuleReaderKilledMidReadLeavesTheJavaReadableToItsPassiveTimeout} shows).
     * A Python worker that sends one — the documented text, with its agent's {@code send_notif} — ends the Java
     * readable ERRORED at once, naming its agent and cause; the shared connector has no passive timeout at all.
     */
    @Test
    void aPythonReaderThatSendsTheFailureReportEndsTheJavaReadableAtOnce() throws Exception {
        ReadableOperation readable = connector.createReadable(sized(List.of(4096), 19));
        long droppedBefore = failureReportsDropped();
        long receivedBefore = notificationsReceived();

        peer.send("failreport " + readable.metadata().toJson());

        assertThat(peer.next("REPORTED ")).isEqualTo("REPORTED " + readable.notificationKey() + " CANCELLED");
        Throwable thrown = catchThrowable(() -> readable.waitForCompletion(WAIT));
        assertThat(readable.status()).isEqualTo(OperationStatus.ERRORED);
        assertThat(thrown).isInstanceOf(TransferException.class)
                .hasMessageContaining("the peer 'dynamo-peer-")
                .hasMessageContaining("reported that its transfer ended without notifying: cancelled by the Python reader");
        assertThat(failureReportsDropped()).as("the report ended the readable: not dropped").isEqualTo(droppedBefore);
        // The report came alone: the peer posted no transfer, so no notification of its key follows it. (Checked
        // after one more read from the same peer, whose notification comes after anything that peer sent before.)
        moduleReads(sized(List.of(4096), 20), false);
        assertThat(notificationsReceived()).as("the report and the next read's notification only")
                .isEqualTo(receivedBefore + 2);
    }
}
