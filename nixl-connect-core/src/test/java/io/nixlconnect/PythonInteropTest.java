package io.nixlconnect;

import io.nixlconnect.transport.nixl.NixlSettings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
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
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Interoperability with a Python worker that uses NIXL's own Python API the way Dynamo's
 * {@code nixl_connect} does ({@code interop/python_peer.py}): Java active operations against Python
 * passive ones and the other way round, over the NIXL backend in both processes.
 *
 * <p>Needs {@code NIXL_LIBRARY_DIR} (NIXL's C API for Java) and {@code NIXL_PYTHON_PATH} (where the
 * {@code nixl} / {@code nixl_cu12} Python package and numpy are installed); {@code .ci/nixl-setup.sh}
 * prints both. Skipped, with the reason, without them. {@code NIXL_PYTHON} names the interpreter
 * (default {@code python3}).
 */
@Tag(TestTags.PYTHON_INTEROP)
@Tag(TestTags.CROSS_PROCESS)
@Tag(TestTags.NIXL)
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class PythonInteropTest {

    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final String LIBRARY_DIR = System.getenv("NIXL_LIBRARY_DIR");
    private static final String PYTHON_PATH = System.getenv("NIXL_PYTHON_PATH");

    private PeerLines peer;
    private Connector connector;
    private final List<Descriptor> owned = new ArrayList<>();

    @BeforeEach
    void startPythonPeer() throws Exception {
        assumeTrue(LIBRARY_DIR != null && !LIBRARY_DIR.isBlank(),
                "NIXL_LIBRARY_DIR is not set: run `eval \"$(.ci/nixl-setup.sh)\"` to test against a real NIXL");
        assumeTrue(PYTHON_PATH != null && !PYTHON_PATH.isBlank(),
                "NIXL_PYTHON_PATH is not set (the folder holding NIXL's Python package): run"
                        + " `eval \"$(.ci/nixl-setup.sh)\"` to test interop with a Python NIXL worker");
        Path script = findScript();
        String python = System.getenv().getOrDefault("NIXL_PYTHON", "python3");
        ProcessBuilder builder = new ProcessBuilder(python, "-u", script.toString());
        builder.environment().put("PYTHONPATH", PYTHON_PATH);
        peer = PeerLines.start(builder, "the Python peer");
        assertThat(next("READY")).startsWith("READY python-peer-");
        connector = new Connector(ConnectorOptions.builder().workerId("java-interop").transports(NixlSettings.defaults().withLibraryDir(Path.of(LIBRARY_DIR)))
                .operationTimeout(Duration.ofSeconds(30)).build());
    }

    @AfterEach
    void stopPythonPeer() throws Exception {
        if (connector != null) {
            connector.close();
        }
        owned.forEach(Descriptor::close);
        if (peer != null) {
            peer.close();
        }
    }

    /** The script lives in {@code interop/} at the repository root; tests run in the module folder. */
    private static Path findScript() {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path candidate = dir.resolve("interop").resolve("python_peer.py");
            if (Files.isRegularFile(candidate)) {
                return candidate;
            }
        }
        throw new IllegalStateException("interop/python_peer.py not found above " + Path.of("").toAbsolutePath());
    }

    private String next(String prefix) throws InterruptedException {
        return peer.next(prefix);
    }

    private static long crc(byte[]... parts) {
        CRC32 crc = new CRC32(); // zlib.crc32 on the Python side
        for (byte[] part : parts) {
            crc.update(part);
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

    @Test
    void javaReadsWhatAPythonWorkerPublished() throws Exception {
        for (String sizes : new String[] {"1", "4096", "4096,0,65536", String.valueOf(64 << 20)}) {
            peer.send("readable " + sizes + " 11");
            long expectedCrc = Long.parseLong(next("DATA ").substring(5));
            String json = next("META ").substring(5);
            RdmaMetadata metadata = RdmaMetadata.fromJson(json);
            assertThat(metadata.nixlMetadata()).startsWith("b64:");
            assertThat(metadata.operationKind()).isEqualTo(OperationKind.READ);

            List<Descriptor> targets = new ArrayList<>();
            for (SerializedDescriptor remote : metadata.descriptors()) {
                targets.add(own(Descriptor.allocate(remote.size())));
            }
            connector.beginRead(metadata, targets).waitForCompletion(WAIT);

            assertThat(next("DONE ")).isEqualTo("DONE " + metadata.notificationKey());
            assertThat(crc(targets.stream().map(Descriptor::toByteArray).toArray(byte[][]::new)))
                    .as("bytes read from Python, sizes %s", sizes).isEqualTo(expectedCrc);
        }
    }

    @Test
    void aPythonWorkerReadsWhatJavaPublished() throws Exception {
        for (int size : new int[] {1, 4096, 64 << 20}) {
            byte[] bytes = data(size, size);
            ReadableOperation readable = connector.createReadable(own(new Descriptor(bytes)));

            peer.send("read " + readable.metadata().toJson());

            assertThat(next("READ ")).isEqualTo("READ " + readable.notificationKey() + " DONE " + crc(bytes));
            readable.waitForCompletion(WAIT);
            assertThat(readable.status()).isEqualTo(OperationStatus.COMPLETE);
        }
    }

    @Test
    void aPythonWorkerReadsBothMetadataForms() throws Exception {
        for (boolean hex : new boolean[] {false, true}) {
            byte[] bytes = data(hex ? 7 : 8, 65536);
            ReadableOperation readable = connector.createReadable(own(new Descriptor(bytes)));
            RdmaMetadata metadata = readable.metadata(hex);
            assertThat(metadata.nixlMetadata().startsWith("b64:")).isEqualTo(!hex);

            peer.send("read " + metadata.toJson());

            assertThat(next("READ ")).isEqualTo("READ " + readable.notificationKey() + " DONE " + crc(bytes));
            readable.waitForCompletion(WAIT);
        }
    }

    @Test
    void pythonReadersTakePartInAFanOutReadableUnchanged() throws Exception {
        byte[] bytes = data(21, 1 << 20);
        ReadableOperation readable = connector.createReadable(3, own(new Descriptor(bytes)));
        String json = readable.metadata().toJson();
        for (int reader = 1; reader <= 3; reader++) {
            peer.send("read " + json);
            assertThat(next("READ ")).isEqualTo("READ " + readable.notificationKey() + " DONE " + crc(bytes));
        }
        readable.waitForCompletion(WAIT);
        assertThat(readable.readsCompleted()).isEqualTo(3);
        assertThat(connector.registeredBytes()).isZero();
    }

    @Test
    void javaWritesIntoAPythonWorker() throws Exception {
        peer.send("writable 4096,100000");
        RdmaMetadata metadata = RdmaMetadata.fromJson(next("META ").substring(5));
        assertThat(metadata.operationKind()).isEqualTo(OperationKind.WRITE);
        byte[] first = data(1, 4096);
        byte[] second = data(2, 100000);

        connector.beginWrite(List.of(own(new Descriptor(first)), own(new Descriptor(second))), metadata)
                .waitForCompletion(WAIT);

        assertThat(next("WRITTEN ")).isEqualTo("WRITTEN " + metadata.notificationKey() + " " + crc(first, second));
    }

    @Test
    void aPythonWorkerWritesIntoJava() throws Exception {
        Descriptor target = own(Descriptor.allocate(8192));
        WritableOperation writable = connector.createWritable(target);

        peer.send("write 8192 5 " + writable.metadata().toJson());

        String wrote = next("WROTE ");
        assertThat(wrote).startsWith("WROTE " + writable.notificationKey() + " DONE ");
        writable.waitForCompletion(WAIT);
        assertThat(crc(target.toByteArray())).isEqualTo(Long.parseLong(wrote.substring(wrote.lastIndexOf(' ') + 1)));
    }
}
