package io.nixlconnect.dynamo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nixlconnect.OperationKind;
import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.SerializedDescriptor;
import io.nixlconnect.InvalidMetadataException;
import io.nixlconnect.dynamo.internal.codec.JsonValues;
import io.nixlconnect.dynamo.internal.codec.MsgpackValues;
import io.nixlconnect.dynamo.internal.codec.Payloads;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Payload values in both codecs, nixl_connect metadata inside them, and hostile payloads. */
class PayloadCodecTest {

    private static RdmaMetadata metadata(int descriptors) {
        List<SerializedDescriptor> list = new ArrayList<>();
        for (int i = 0; i < descriptors; i++) {
            list.add(new SerializedDescriptor("cpu", 4096L * (i + 1), 4096));
        }
        return RdmaMetadata.of(list, "agent-metadata".getBytes(StandardCharsets.UTF_8), "key-1", OperationKind.READ);
    }

    @Test
    void valuesRoundTripThroughBothCodecs() {
        Map<String, Object> value = new LinkedHashMap<>();
        value.put("s", "héllo ✓");
        value.put("i", Long.MIN_VALUE);
        value.put("u", new BigInteger("18446744073709551615"));
        value.put("f", -0.25);
        value.put("t", true);
        value.put("n", null);
        value.put("l", Arrays.asList(1L, "2", null, List.of()));
        value.put("m", Map.of("k", Map.of()));
        for (PayloadCodec codec : PayloadCodec.values()) {
            byte[] bytes = Payloads.encode(codec, value);
            assertThat(Payloads.decode(codec, bytes, 0, bytes.length)).as(codec.name()).isEqualTo(value);
        }
        byte[] packed = MsgpackValues.write(Map.of("b", new byte[] {1, 2, 3}));
        assertThat((byte[]) ((Map<?, ?>) MsgpackValues.parse(packed)).get("b")).containsExactly(1, 2, 3);
        assertThat(new String(JsonValues.write(new byte[] {1, (byte) 255}), StandardCharsets.UTF_8)).isEqualTo("[1,255]");
    }

    @Test
    void javaNumbersAndArraysAreWrittenAsTheirPlainValues() {
        assertThat(DynamoValues.normalize(Map.of("i", 3, "s", (short) 4, "f", 1.5f, "a", new int[] {1, 2},
                "o", new Object[] {"x"}))).isEqualTo(Map.of("i", 3L, "s", 4L, "f", 1.5, "a", List.of(1L, 2L),
                        "o", List.of("x")));
        assertThatThrownBy(() -> DynamoValues.normalize(new Object())).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("convert it first");
        assertThatThrownBy(() -> JsonValues.write(Double.NaN)).isInstanceOf(IllegalArgumentException.class);
        List<Object> cycle = new ArrayList<>();
        cycle.add(cycle);
        assertThatThrownBy(() -> DynamoValues.normalize(cycle)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("deeper");
    }

    @Test
    void rdmaMetadataTravelsAsPythonsModelDump() {
        RdmaMetadata metadata = metadata(2);
        Map<String, Object> dump = DynamoValues.fromRdmaMetadata(metadata);
        assertThat(dump.keySet()).containsExactly("descriptors", "nixl_metadata", "notification_key", "operation_kind");
        assertThat(dump.get("descriptors")).isEqualTo(List.of(Map.of("device", "cpu", "ptr", 4096L, "size", 4096L),
                Map.of("device", "cpu", "ptr", 8192L, "size", 4096L)));
        assertThat(dump.get("operation_kind")).isEqualTo(1L);
        for (PayloadCodec codec : PayloadCodec.values()) {
            byte[] bytes = Payloads.encode(codec, Map.of("meta", metadata));
            Object back = ((Map<?, ?>) Payloads.decode(codec, bytes, 0, bytes.length)).get("meta");
            assertThat(DynamoValues.toRdmaMetadata(back)).isEqualTo(metadata);
        }
        Map<String, Object> empty = new LinkedHashMap<>(dump);
        empty.put("descriptors", List.of());
        assertThatThrownBy(() -> DynamoValues.toRdmaMetadata(empty))
                .isInstanceOf(InvalidMetadataException.class).hasMessageContaining("descriptors");
        assertThatThrownBy(() -> DynamoValues.toRdmaMetadata("secret-text")).isInstanceOf(InvalidMetadataException.class)
                .hasMessageContaining("must be a map, was a string").hasMessageNotContaining("secret-text");
        assertThatThrownBy(() -> DynamoValues.toRdmaMetadata(List.of("secret-text")))
                .hasMessageContaining("was a list").hasMessageNotContaining("secret-text");
        assertThatThrownBy(() -> DynamoValues.toRdmaMetadata(new byte[] {1})).hasMessageContaining("was bytes");
    }

    @Test
    void theEncodeWorkersReplyReadsAndWritesAsTrtLlmsEncodeHelper() {
        RdmaMetadata metadata = metadata(1);
        Map<String, Object> tensor = new LinkedHashMap<>();
        tensor.put("data", List.of(1L, 2L, 3L));
        tensor.put("shape", List.of(3L));
        tensor.put("dtype", "torch.int64");
        EncodeReply reply = new EncodeReply(metadata, List.of(2L, 8L), "torch.float16", Map.of("tokens", tensor));
        Map<String, Object> value = reply.toValue();
        assertThat(value.keySet()).containsExactly("nixl_readable_metadata", "embeddings_shape", "embeddings_dtype",
                "auxiliary_data");
        for (PayloadCodec codec : PayloadCodec.values()) {
            byte[] bytes = Payloads.encode(codec, reply);
            EncodeReply back = EncodeReply.fromValue(Payloads.decode(codec, bytes, 0, bytes.length));
            assertThat(back).isEqualTo(reply);
            assertThat(back.elementCount()).isEqualTo(16);
        }
        Map<String, Object> withoutAuxiliary = new LinkedHashMap<>(value);
        withoutAuxiliary.remove("auxiliary_data");
        assertThat(EncodeReply.fromValue(withoutAuxiliary).auxiliaryData()).isEmpty();
        assertThatThrownBy(() -> EncodeReply.fromValue(Map.of("error", "no GPU"))).isInstanceOf(DynamoWorkerException.class)
                .hasMessageContaining("no GPU");
        Map<String, Object> badShape = new LinkedHashMap<>(value);
        badShape.put("embeddings_shape", List.of(-1L));
        assertThatThrownBy(() -> EncodeReply.fromValue(badShape)).isInstanceOf(DynamoProtocolException.class);
        assertThat(EncodeReply.ofBytes(metadata, 4096).embeddingsDtype()).isEqualTo("torch.uint8");
    }

    @Test
    void aKvReplyOfAThousandAndTwentyFourBlocksRoundTrips() {
        RdmaMetadata metadata = metadata(1024);
        for (PayloadCodec codec : PayloadCodec.values()) {
            byte[] bytes = Payloads.encode(codec, Map.of("kv", metadata));
            RdmaMetadata back = DynamoValues.toRdmaMetadata(((Map<?, ?>) Payloads.decode(codec, bytes, 0,
                    bytes.length)).get("kv"));
            assertThat(back.descriptors()).hasSize(1024);
            assertThat(back).isEqualTo(metadata);
        }
    }

    @Test
    void claimedLengthsBeyondThePayloadAreRefusedBeforeAllocating() {
        byte[][] hostile = {
            {(byte) 0xdd, 0x7f, (byte) 0xff, (byte) 0xff, (byte) 0xff},   // array of 2^31-1 elements
            {(byte) 0xdf, 0x7f, (byte) 0xff, (byte) 0xff, (byte) 0xff},   // map of 2^31-1 entries
            {(byte) 0xdb, 0x7f, (byte) 0xff, (byte) 0xff, (byte) 0xff},   // string of 2 GiB
            {(byte) 0xc6, 0x7f, (byte) 0xff, (byte) 0xff, (byte) 0xff},   // binary of 2 GiB
            {(byte) 0xdd, (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff}, // array of 2^32-1 elements
        };
        for (byte[] bytes : hostile) {
            assertThatThrownBy(() -> MsgpackValues.parse(bytes)).isInstanceOf(DynamoProtocolException.class)
                    .hasMessageContaining("malformed msgpack");
        }
        assertThatThrownBy(() -> MsgpackValues.parse(new byte[] {(byte) 0xd4, 1, 2})).isInstanceOf(DynamoProtocolException.class)
                .hasMessageContaining("extension");
        assertThatThrownBy(() -> MsgpackValues.parse(new byte[] {(byte) 0xa2, (byte) 0xff, (byte) 0xfe}))
                .isInstanceOf(DynamoProtocolException.class).hasMessageContaining("UTF-8");
        assertThatThrownBy(() -> MsgpackValues.parse(new byte[] {1, 2})).isInstanceOf(DynamoProtocolException.class)
                .hasMessageContaining("after the value");
        byte[] deep = new byte[600];
        Arrays.fill(deep, (byte) 0x91); // 600 nested one-element arrays
        assertThatThrownBy(() -> MsgpackValues.parse(deep)).isInstanceOf(DynamoProtocolException.class)
                .hasMessageContaining("deeper");
        String deepJson = "[".repeat(600) + "]".repeat(600);
        assertThatThrownBy(() -> JsonValues.parse(deepJson.getBytes(StandardCharsets.UTF_8), 1 << 20))
                .isInstanceOf(DynamoProtocolException.class);
        assertThatThrownBy(() -> JsonValues.parse("{\"a\":1,\"a\":2}".getBytes(StandardCharsets.UTF_8), 100))
                .isInstanceOf(DynamoProtocolException.class);
        assertThatThrownBy(() -> JsonValues.parse("1".repeat(2000).getBytes(StandardCharsets.UTF_8), 1 << 20))
                .isInstanceOf(DynamoProtocolException.class);
    }

    /** Random bytes and random corruptions of good payloads: a value or a DynamoProtocolException, nothing else. */
    @Test
    void fuzzedPayloadsDecodeOrAreRefused() {
        Random random = new Random(1733);
        byte[][] seeds = {MsgpackValues.write(DynamoValues.fromRdmaMetadata(metadata(3))),
            JsonValues.write(DynamoValues.fromRdmaMetadata(metadata(3)))};
        for (int round = 0; round < 5000; round++) {
            byte[] bytes;
            if (round % 3 == 0) {
                bytes = new byte[random.nextInt(64)];
                random.nextBytes(bytes);
            } else {
                bytes = seeds[round % 2].clone();
                for (int i = 0, flips = 1 + random.nextInt(6); i < flips; i++) {
                    bytes[random.nextInt(bytes.length)] = (byte) random.nextInt(256);
                }
            }
            for (PayloadCodec codec : PayloadCodec.values()) {
                try {
                    Payloads.decode(codec, bytes, 0, bytes.length);
                } catch (DynamoProtocolException expected) {
                    // refused
                }
            }
        }
    }
}
