package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.nixlconnect.transport.nixl.NixlSettings;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 12 item 2 on two JVMs over UCX TCP ({@code UCX_TLS=tcp,self}): an owner publishes a readable;
 * the test edits the NIXL agent metadata in its JSON the way a hostile peer would and hands each edit to a
 * reader JVM. Before the Java checks, each of these killed the reader inside NIXL or UCX (the NIXL memory
 * types in {@code nixlMemSection::emplace}, the UCX key's memory type in
 * {@code ucp_proto_init_add_buffer_copy_time}, the address version in a UCX assertion). Now each is an
 * {@link InvalidMetadataException} naming the field, the reader stays up, and the genuine metadata still
 * reads the owner's bytes.
 */
@Tag(TestTags.CROSS_PROCESS)
@Tag(TestTags.NIXL)
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class HostileAgentMetadataAcrossProcessesTest {

    private static final String LIBRARY_DIR = System.getenv("NIXL_LIBRARY_DIR");
    private static final int SIZE = 4096;

    /** One hostile edit of the blob and the NIXL field its refusal must name. */
    private record Edit(String name, String field, java.util.function.UnaryOperator<byte[]> change) {
    }

    @Test
    void hostileAgentMetadataIsRefusedAndTheReaderSurvives() throws Exception {
        assumeTrue(LIBRARY_DIR != null && !LIBRARY_DIR.isBlank(),
                "NIXL_LIBRARY_DIR is not set: run `eval \"$(.ci/nixl-setup.sh)\"` to test against a real NIXL");
        try (PeerLines owner = start("owner"); PeerLines reader = start("reader")) {
            owner.next("READY");
            reader.next("READY");
            owner.send("publish");
            RdmaMetadata real = RdmaMetadata.fromJson(owner.next("META ").substring(5));
            byte[] blob = NixlMetadataCodec.decode(real.nixlMetadata(), 1 << 24);
            Edit[] edits = {
                memoryType(0xfb000000), memoryType(0xff), memoryType(0x7fffffff), memoryType(5),
                new Edit("UCX key memory type 10", "MemSection[0].descs[0].key", b -> set(b, keyAt(b) + 8, 10)),
                new Edit("UCX key distance list without terminator", "MemSection[0].descs[0].key",
                        b -> set(b, lastKeyByteAt(b), 0x01)),
                new Edit("UCX address version 2", "Conns[0].c", b -> set(b, addressAt(b), (b[addressAt(b)] & 0xf0) | 2)),
            };
            for (Edit edit : edits) {
                byte[] hostile = edit.change().apply(blob.clone());
                String json = RdmaMetadata.of(real.descriptors(), hostile, real.notificationKey(), real.operationKind())
                        .toJson();
                reader.send("read " + json);
                String answer = reader.next("ANSWER ");
                assertThat(answer).as(edit.name()).startsWith("ANSWER REFUSED nixl_metadata")
                        .contains("'" + edit.field() + "'");
                assertThat(reader.process().isAlive()).as("reader alive after %s", edit.name()).isTrue();
            }
            reader.send("read " + real.toJson());
            assertThat(reader.next("ANSWER ")).isEqualTo("ANSWER DONE " + checksum());
            owner.send("exit");
            reader.send("exit");
            assertThat(owner.process().waitFor(60, TimeUnit.SECONDS)).isTrue();
            assertThat(reader.process().waitFor(60, TimeUnit.SECONDS)).isTrue();
            assertThat(reader.process().exitValue()).as("reader exit status").isZero();
        }
    }

    private static Edit memoryType(int value) {
        return new Edit("NIXL memory type 0x" + Integer.toHexString(value), "MemSection[0].t", b -> {
            int at = indexOf(b, "nixlSDList|t") + "nixlSDList|t".length() + Long.BYTES;
            ByteBuffer.wrap(b, at, 4).order(ByteOrder.LITTLE_ENDIAN).putInt(value);
            return b;
        });
    }

    private static byte[] set(byte[] blob, int at, int value) {
        blob[at] = (byte) value;
        return blob;
    }

    /** The first byte of the UCX worker address (the first backend's connection info). */
    private static int addressAt(byte[] blob) {
        return indexOf(blob, "|c") + 2 + Long.BYTES;
    }

    /** The first byte of the first descriptor's UCX key (after its address, length and device id). */
    private static int keyAt(byte[] blob) {
        int count = indexOf(blob, "nixlSDList|t") + "nixlSDList|t".length() + Long.BYTES + 4 + 1; // "|n"
        int firstDescriptor = count + 1 + Long.BYTES + Long.BYTES + 1; // "n", length, value, '|'
        return firstDescriptor + Long.BYTES + 3 * Long.BYTES;          // "" tag, length, addr/len/devId
    }

    /** The first descriptor's last key byte: the system device, unknown (0xff) for host memory here. */
    private static int lastKeyByteAt(byte[] blob) {
        int descriptorLength = (int) ByteBuffer.wrap(blob, keyAt(blob) - 3 * Long.BYTES - Long.BYTES, Long.BYTES)
                .order(ByteOrder.LITTLE_ENDIAN).getLong();
        return keyAt(blob) - 3 * Long.BYTES + descriptorLength - 1;
    }

    private static int indexOf(byte[] blob, String text) {
        byte[] needle = text.getBytes(StandardCharsets.US_ASCII);
        for (int i = 0; i + needle.length <= blob.length; i++) {
            if (Arrays.equals(blob, i, i + needle.length, needle, 0, needle.length)) {
                return i;
            }
        }
        throw new AssertionError(text + " not in the blob");
    }

    private static long checksum() {
        return Arrays.hashCode(pattern());
    }

    private static byte[] pattern() {
        byte[] bytes = new byte[SIZE];
        for (int i = 0; i < SIZE; i++) {
            bytes[i] = (byte) (i * 31 + 7);
        }
        return bytes;
    }

    private static PeerLines start(String role) throws Exception {
        return PeerLines.startJvmOverUcxTcp(HostileAgentMetadataAcrossProcessesTest.class, role);
    }

    /** {@code owner|reader}, driven over stdin (see the test). */
    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        String role = args[0];
        ConnectorOptions options = ConnectorOptions.builder().workerId(role + "-" + ProcessHandle.current().pid())
                .transports(NixlSettings.defaults().withLibraryDir(Path.of(LIBRARY_DIR)))
                .operationTimeout(Duration.ofSeconds(60)).build();
        try (Connector connector = new Connector(options);
             BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            out.println("READY");
            Descriptor published = null;
            ReadableOperation readable = null;
            String line;
            while ((line = in.readLine()) != null) {
                String[] words = line.trim().split("\\s+", 2);
                switch (words[0]) {
                    case "publish" -> {
                        published = new Descriptor(pattern());
                        readable = connector.createReadable(published);
                        out.println("META " + readable.metadata().toJson());
                    }
                    case "read" -> {
                        try (Descriptor target = Descriptor.allocate(SIZE)) {
                            try (ReadOperation read = connector.beginRead(RdmaMetadata.fromJson(words[1]), target)) {
                                read.waitForCompletion(Duration.ofSeconds(60));
                                out.println("ANSWER " + read.status() + " " + Arrays.hashCode(target.toByteArray()));
                            }
                        } catch (InvalidMetadataException e) {
                            out.println("ANSWER REFUSED " + e.field() + " " + e.getMessage());
                        }
                    }
                    case "exit" -> {
                        return;
                    }
                    default -> out.println("ERROR unknown command " + words[0]);
                }
            }
        }
    }
}
