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
 * Interoperability with a Python worker of our own on NIXL's Python API ({@code interop/python_peer.py}), kept
 * only for what the real {@code dynamo.nixl_connect} cannot do (everything it can is in {@link DynamoInteropTest}):
 * Java passive operations holding zero-length descriptors, which the module hands to NIXL as they are and NIXL
 * then finds no region for.
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

    /**
     * What the real module (DynamoInteropTest) cannot do: complete a Java passive operation that holds a zero-length
     * descriptor. Java registers no NIXL region for one; this peer, like Java, skips zero-length pairs and, when
     * nothing is left to move, sends the notification alone.
     */
    @Test
    void aNixlPythonPeerReadsJavaReadablesWithZeroLengthDescriptors() throws Exception {
        byte[] first = data(1, 4096);
        byte[] second = data(2, 65536);
        ReadableOperation readable = connector.createReadable(own(new Descriptor(first)), own(new Descriptor(new byte[0])),
                own(new Descriptor(second)));
        peer.send("read " + readable.metadata().toJson());
        assertThat(next("READ ")).isEqualTo("READ " + readable.notificationKey() + " DONE " + crc(first, second));
        readable.waitForCompletion(WAIT);

        ReadableOperation empty = connector.createReadable(own(new Descriptor(new byte[0])));
        peer.send("read " + empty.metadata().toJson());
        assertThat(next("READ ")).isEqualTo("READ " + empty.notificationKey() + " DONE " + crc());
        empty.waitForCompletion(WAIT);
        assertThat(empty.status()).isEqualTo(OperationStatus.COMPLETE);
    }

    @Test
    void aNixlPythonPeerWritesIntoAJavaWritableWithAZeroLengthDescriptor() throws Exception {
        Descriptor target = own(Descriptor.allocate(8192));
        WritableOperation writable = connector.createWritable(target, own(Descriptor.allocate(0)));

        peer.send("write 8192,0 5 " + writable.metadata().toJson());

        String wrote = next("WROTE ");
        assertThat(wrote).startsWith("WROTE " + writable.notificationKey() + " DONE ");
        writable.waitForCompletion(WAIT);
        assertThat(crc(target.toByteArray())).isEqualTo(Long.parseLong(wrote.substring(wrote.lastIndexOf(' ') + 1)));
    }
}
