package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Immutability, equality and the accessors of {@link RdmaMetadata}. */
class RdmaMetadataWireTest {

    private static final byte[] AGENT = "NIXLAGENT:immutable".getBytes();

    private static RdmaMetadata sample() {
        List<SerializedDescriptor> descriptors = new ArrayList<>();
        descriptors.add(new SerializedDescriptor("cuda:0", 4096, 16));
        descriptors.add(new SerializedDescriptor("cuda:0", 8192, 32));
        return RdmaMetadata.of(descriptors, AGENT, "key", OperationKind.WRITE);
    }

    @Test
    void descriptorsAreUnmodifiable() {
        RdmaMetadata metadata = sample();
        List<SerializedDescriptor> descriptors = metadata.descriptors();
        SerializedDescriptor extra = new SerializedDescriptor("cpu", 1, 1);
        assertThatThrownBy(() -> descriptors.add(extra)).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> descriptors.set(0, extra)).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> descriptors.remove(0)).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(descriptors::clear).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> descriptors.iterator().remove()).isInstanceOf(RuntimeException.class);
        assertThat(metadata.descriptors()).hasSize(2);
    }

    @Test
    void descriptorsAreCopiedFromTheCallersList() {
        List<SerializedDescriptor> mine = new ArrayList<>(List.of(new SerializedDescriptor("cpu", 4096, 16)));
        RdmaMetadata metadata = RdmaMetadata.of(mine, AGENT, "key", OperationKind.READ);
        String before = metadata.toJson();
        mine.add(new SerializedDescriptor("cpu", 8192, 16));
        mine.set(0, new SerializedDescriptor("cpu", 12288, 16));
        assertThat(metadata.descriptors()).containsExactly(new SerializedDescriptor("cpu", 4096, 16));
        assertThat(metadata.toJson()).isEqualTo(before);
    }

    @Test
    void decodeNixlMetadataReturnsAFreshCopy() {
        RdmaMetadata metadata = sample();
        byte[] first = metadata.decodeNixlMetadata();
        assertThat(first).isEqualTo(AGENT);
        first[0] = 'X';
        Arrays.fill(first, (byte) 0);
        byte[] second = metadata.decodeNixlMetadata();
        assertThat(second).isEqualTo(AGENT).isNotSameAs(first);
    }

    @Test
    void equalsAndHashCode() {
        RdmaMetadata a = sample();
        RdmaMetadata b = RdmaMetadata.fromJson(a.toJson());
        assertThat(a).isEqualTo(b).hasSameHashCodeAs(b);
        List<SerializedDescriptor> d = a.descriptors();
        assertThat(a).isNotEqualTo(RdmaMetadata.of(d, AGENT, "other", OperationKind.WRITE))
                .isNotEqualTo(RdmaMetadata.of(d, AGENT, "key", OperationKind.READ))
                .isNotEqualTo(RdmaMetadata.of(d.subList(0, 1), AGENT, "key", OperationKind.WRITE))
                .isNotEqualTo(RdmaMetadata.of(d, "NIXLAGENT:other".getBytes(), "key", OperationKind.WRITE))
                .isNotEqualTo(null)
                .isNotEqualTo(a.toJson());
    }

    @Test
    void theEncodingTravelsAsReceived() {
        // legacy hex stays hex on the way back out (a relay must not change what it forwards)
        byte[] zlib = Base64.getDecoder().decode(NixlMetadataCodec.encode(AGENT).substring(4));
        String hex = HexFormat.of().formatHex(zlib);
        RdmaMetadata legacy = new RdmaMetadata(sample().descriptors(), hex, "key", OperationKind.WRITE);
        assertThat(legacy.nixlMetadata()).isEqualTo(hex);
        assertThat(legacy.toJson()).contains("\"nixl_metadata\":\"" + hex + "\"");
        assertThat(legacy.decodeNixlMetadata()).isEqualTo(AGENT);
        assertThat(legacy.decodeNixlMetadata()).isEqualTo(sample().decodeNixlMetadata());
    }

    @Test
    void toStringIsShort() {
        RdmaMetadata metadata = sample();
        // The key is a credential on the embedded transport: its fingerprint stands in for it.
        assertThat(metadata.toString()).contains("WRITE").contains(metadata.notificationKeyFingerprint())
                .doesNotContain("key").doesNotContain(metadata.nixlMetadata());
    }

    @Test
    void accessors() {
        RdmaMetadata metadata = sample();
        assertThat(metadata.operationKind()).isEqualTo(OperationKind.WRITE);
        assertThat(metadata.notificationKey()).isEqualTo("key");
        assertThat(metadata.nixlMetadata()).startsWith("b64:");
        assertThat(metadata.totalSize()).isEqualTo(48);
        assertThat(metadata.toJson()).startsWith("{\"descriptors\":[{\"device\":\"cuda:0\",\"ptr\":4096,\"size\":16},")
                .endsWith("\"notification_key\":\"key\",\"operation_kind\":2}");
    }
}
