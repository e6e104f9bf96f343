package io.nixlconnect.transport.nixl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nixlconnect.transport.InvalidAgentMetadataException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * NIXL agent metadata is checked in Java before NIXL sees it (issue 12 item 2). The blob is a real one,
 * from NIXL 1.5.1 (the CI wheel) with one UCX backend and two registered DRAM regions.
 */
class NixlMetadataFormatTest {

    private static byte[] real() throws Exception {
        try (InputStream in = NixlMetadataFormatTest.class.getResourceAsStream("/nixl-agent-metadata/ucx-two-dram-regions.bin")) {
            return in.readAllBytes();
        }
    }

    private static int indexOf(byte[] blob, String text) {
        byte[] needle = text.getBytes(StandardCharsets.US_ASCII);
        outer:
        for (int i = 0; i + needle.length <= blob.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (blob[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return i;
        }
        throw new AssertionError(text + " not in blob");
    }

    /** Offset of the value of the first field whose tag is {@code tag} followed by a length of {@code length}. */
    private static int valueOf(byte[] blob, String tagAndPrefix, int skip) {
        return indexOf(blob, tagAndPrefix) + tagAndPrefix.length() + skip;
    }

    private static String refusedField(byte[] blob) {
        try {
            NixlMetadataFormat.validate(blob);
        } catch (InvalidAgentMetadataException e) {
            return e.field();
        }
        return null;
    }

    @Test
    void realBlobIsAccepted() throws Exception {
        NixlMetadataFormat.Parsed parsed = NixlMetadataFormat.validate(real());
        assertThat(parsed.agent()).startsWith("fuzz-source-");
        assertThat(parsed.backends()).containsExactly("UCX");
        assertThat(parsed.regions()).hasSize(2).allSatisfy(region -> {
            assertThat(region.memoryType()).isEqualTo(NixlMetadataFormat.MEM_DRAM);
            assertThat(region.backend()).isEqualTo("UCX");
            assertThat(region.deviceId()).isZero();
        });
        assertThat(parsed.regions()).extracting(NixlMetadataFormat.Region::length).containsExactlyInAnyOrder(4096L, 1L << 20);
        assertThat(NixlMetadataFormat.agentName(real())).isEqualTo(parsed.agent());
    }

    /** The values that crashed the loading JVM in nixlMemSection::emplace (5 loaded, then crashed at close). */
    @ParameterizedTest
    @ValueSource(ints = {0xfb000000, 0xff, 0x7fffffff, 5, 2, 3, 4, -1})
    void outOfRangeMemoryTypeIsRefusedNamingTheField(int memoryType) throws Exception {
        byte[] blob = real();
        int at = indexOf(blob, "nixlSDList|t") + "nixlSDList|t".length() + Long.BYTES;
        ByteBuffer.wrap(blob, at, 4).order(ByteOrder.LITTLE_ENDIAN).putInt(memoryType);
        assertThatThrownBy(() -> NixlMetadataFormat.validate(blob))
                .isInstanceOf(InvalidAgentMetadataException.class)
                .hasMessageContaining("MemSection[0].t")
                .hasMessageContaining("memory type " + Integer.toUnsignedString(memoryType));
    }

    @Test
    void framingErrorsAreRefusedNamingTheField() throws Exception {
        byte[] real = real();
        assertThat(refusedField(Arrays.copyOf(real, 5))).isEqualTo("header");
        assertThat(refusedField(Arrays.copyOf(real, real.length - 1))).isEqualTo("MemSection[0].descs[1]");
        byte[] longer = Arrays.copyOf(real, real.length + 1);
        assertThat(refusedField(longer)).isEqualTo("end");

        byte[] huge = real.clone();
        ByteBuffer.wrap(huge, valueOf(huge, "nixlSerDes|Agent", 0), 8).order(ByteOrder.LITTLE_ENDIAN).putLong(-1);
        assertThat(refusedField(huge)).isEqualTo("Agent");

        byte[] conns = real.clone();
        ByteBuffer.wrap(conns, valueOf(conns, "Conns", 8), 8).order(ByteOrder.LITTLE_ENDIAN).putLong(1L << 40);
        assertThat(refusedField(conns)).isEqualTo("Conns");

        byte[] sections = real.clone();
        ByteBuffer.wrap(sections, valueOf(sections, "nixlSecElms", 8), 8).order(ByteOrder.LITTLE_ENDIAN).putLong(0x7fffffff);
        assertThat(refusedField(sections)).isEqualTo("nixlSecElms");

        byte[] count = real.clone();
        ByteBuffer.wrap(count, valueOf(count, "|n\u0008", 7), 8).order(ByteOrder.LITTLE_ENDIAN).putLong(3);
        assertThat(refusedField(count)).isEqualTo("MemSection[0].descs[2]");

        byte[] backend = real.clone();
        backend[valueOf(backend, "bknd", 8)] = 'X';
        assertThat(refusedField(backend)).isEqualTo("MemSection[0].bknd");

        byte[] separator = real.clone();
        separator[indexOf(separator, "|Conns")] = '#';
        assertThat(refusedField(separator)).isEqualTo("Agent");

        byte[] list = real.clone();
        list[indexOf(list, "nixlSDList") + 5] = 'B';
        assertThat(refusedField(list)).isEqualTo("MemSection[0].nixlDList");
    }

    @Test
    void descriptorsAreChecked() throws Exception {
        byte[] real = real();
        int firstDesc = indexOf(real, "|n\u0008") + 2 + 8 + 8 + 1 + 8; // n's length and value, '|', "" tag, its length
        byte[] zeroAddress = real.clone();
        ByteBuffer.wrap(zeroAddress, firstDesc, 8).order(ByteOrder.LITTLE_ENDIAN).putLong(0);
        assertThat(refusedField(zeroAddress)).isEqualTo("MemSection[0].descs[0].addr");

        byte[] wrapping = real.clone();
        ByteBuffer.wrap(wrapping, firstDesc, 16).order(ByteOrder.LITTLE_ENDIAN).putLong(-4096).putLong(8192);
        assertThat(refusedField(wrapping)).isEqualTo("MemSection[0].descs[0].len");

        byte[] device = real.clone();
        ByteBuffer.wrap(device, firstDesc + 16, 8).order(ByteOrder.LITTLE_ENDIAN).putLong(3);
        assertThat(refusedField(device)).isEqualTo("MemSection[0].descs[0].devId");
    }

    @Test
    void nullAndGarbageAreRefused() {
        assertThat(refusedField(null)).isEqualTo("header");
        assertThat(refusedField(new byte[] {1, 2, 3})).isEqualTo("header");
        assertThat(refusedField("nixlSerDes|".getBytes(StandardCharsets.US_ASCII))).isEqualTo("Agent");
    }

    /** Re-assembled from its connection part and all its sections, a real blob comes out byte for byte. */
    @Test
    void aBlobReassembledFromItsPartsIsTheSameBlob() throws Exception {
        byte[] blob = real();
        byte[] connections = NixlMetadataFormat.connectionPart(blob);
        java.util.List<NixlMetadataFormat.Section> sections = NixlMetadataFormat.sections(blob);
        assertThat(NixlMetadataFormat.assemble(connections, sections)).isEqualTo(blob);
    }

    /**
     * One descriptor's sections only: a valid blob (same agent, same connection) describing that region alone, the
     * same whichever order and however often the parts come.
     */
    @Test
    void aBlobOfSomeRegionsDescribesThoseOnlyAndValidates() throws Exception {
        byte[] blob = real();
        NixlMetadataFormat.Parsed full = NixlMetadataFormat.validate(blob);
        assertThat(full.regions()).hasSize(2);
        NixlMetadataFormat.Section section = NixlMetadataFormat.sections(blob).get(0);
        NixlMetadataFormat.Section second = new NixlMetadataFormat.Section(section.backend(), section.memoryType(),
                java.util.List.of(section.descriptors().get(1)));
        NixlMetadataFormat.Section first = new NixlMetadataFormat.Section(section.backend(), section.memoryType(),
                java.util.List.of(section.descriptors().get(0)));
        byte[] connections = NixlMetadataFormat.connectionPart(blob);

        NixlMetadataFormat.Parsed one = NixlMetadataFormat.validate(
                NixlMetadataFormat.assemble(connections, java.util.List.of(second)));
        assertThat(one.agent()).isEqualTo(full.agent());
        assertThat(one.backends()).isEqualTo(full.backends());
        assertThat(one.regions()).containsExactly(full.regions().get(1));

        // Two registrations' sections given out of order and one twice: NIXL's order, each once (the whole blob).
        assertThat(NixlMetadataFormat.assemble(connections, java.util.List.of(second, first, second))).isEqualTo(blob);
    }
}
