package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The JSON fast path writes what Jackson writes, reads what Jackson reads, and leaves everything else to Jackson. */
class CompactJsonTest {

    private static final String AGENT = NixlMetadataCodec.encode("agent-metadata".getBytes());

    private static String jackson(RdmaMetadata metadata) {
        Map<String, Object> map = new LinkedHashMap<>();
        List<Map<String, Object>> items = new ArrayList<>();
        for (SerializedDescriptor descriptor : metadata.descriptors()) {
            Map<String, Object> item = new LinkedHashMap<>();
            item.put("device", descriptor.device());
            item.put("ptr", descriptor.ptr());
            item.put("size", descriptor.size());
            items.add(item);
        }
        map.put("descriptors", items);
        map.put("nixl_metadata", metadata.nixlMetadata());
        map.put("notification_key", metadata.notificationKey());
        map.put("operation_kind", metadata.operationKind().value());
        return Json.MAPPER.writeValueAsString(map);
    }

    /** What fromJson does without the fast path: Jackson's tree, then the same validation. */
    private static RdmaMetadata throughJackson(String json) {
        Map<?, ?> tree = (Map<?, ?>) Json.MAPPER.readValue(json, Object.class);
        return RdmaMetadata.fromJsonFields(tree.get("descriptors"), tree.get("nixl_metadata"),
                tree.get("notification_key"), tree.get("operation_kind"));
    }

    @Test
    void writesExactlyWhatJacksonWritesAndReadsItBack() {
        SplittableRandom random = new SplittableRandom(5);
        for (int round = 0; round < 500; round++) {
            List<SerializedDescriptor> descriptors = new ArrayList<>();
            for (int i = 0, n = 1 + random.nextInt(4); i < n; i++) {
                String device = random.nextBoolean() ? "cpu" : "cuda:" + random.nextInt(8);
                descriptors.add(new SerializedDescriptor(device, 1 + (random.nextLong(Long.MAX_VALUE - 1) >>> random.nextInt(63)),
                        random.nextLong(Long.MAX_VALUE)));
            }
            RdmaMetadata metadata = new RdmaMetadata(descriptors, AGENT, "key-" + random.nextLong(),
                    random.nextBoolean() ? OperationKind.READ : OperationKind.WRITE);
            String json = metadata.toJson();
            assertThat(json).isEqualTo(jackson(metadata));
            assertThat(CompactJson.read(json)).isEqualTo(metadata).isEqualTo(throughJackson(json));
        }
    }

    @Test
    void aKeyThatNeedsEscapingGoesThroughJacksonBothWays() {
        RdmaMetadata metadata = new RdmaMetadata(List.of(new SerializedDescriptor("cpu", 1, 2)), AGENT,
                "quote \" backslash \\ tab \t é", OperationKind.READ);
        assertThat(metadata.toJson()).isEqualTo(jackson(metadata));
        assertThat(CompactJson.read(metadata.toJson())).isNull();
        assertThat(RdmaMetadata.fromJson(metadata.toJson())).isEqualTo(metadata);
    }

    @Test
    void readsWhatJacksonReadsInAnyFieldOrder() {
        String json = "{\"operation_kind\":2,\"notification_key\":\"k-1\",\"descriptors\":[{\"size\":999999999999999999,"
                + "\"ptr\":5,\"device\":\"cuda:3\"},{\"device\":\"cpu\",\"ptr\":7,\"size\":0}],\"nixl_metadata\":\"" + AGENT + "\"}";
        RdmaMetadata fast = CompactJson.read(json);
        assertThat(fast).isNotNull().isEqualTo(throughJackson(json));
        assertThat(RdmaMetadata.fromJson(json)).isEqualTo(fast);
    }

    @Test
    void leavesEverythingElseToJackson() {
        String fields = "\"nixl_metadata\":\"" + AGENT + "\",\"notification_key\":\"k\",\"operation_kind\":1";
        String descriptor = "{\"device\":\"cpu\",\"ptr\":4096,\"size\":16}";
        assertThat(CompactJson.read("{\"descriptors\":[" + descriptor + "]," + fields + "}")).as("the baseline").isNotNull();
        for (String json : List.of(
                "{ \"descriptors\": [" + descriptor + "], " + fields + "}", // whitespace (Python's json.dumps)
                "{\"descriptors\":[" + descriptor + "]," + fields.replace("\"k\"", "\"\\u006B\"") + "}", // an escape
                "{\"descriptors\":[" + descriptor + "]," + fields.replace("\"k\"", "\"é\"") + "}", // non-ASCII
                "{\"descriptors\":[" + descriptor.replace("16", "16.0") + "]," + fields + "}", // not plain integers
                "{\"descriptors\":[" + descriptor.replace("16", "1e3") + "]," + fields + "}",
                "{\"descriptors\":[" + descriptor.replace("16", "016") + "]," + fields + "}",
                "{\"descriptors\":[" + descriptor.replace("16", "\"16\"") + "]," + fields + "}", // an integer as a string
                "{\"descriptors\":[" + descriptor.replace("16", "9223372036854775808") + "]," + fields + "}", // beyond 64 bits
                "{\"descriptors\":[" + descriptor.replace("16", "null") + "]," + fields + "}", // a literal
                "{\"descriptors\":[" + descriptor.replace("}", ",\"size\":16}") + "]," + fields + "}", // a duplicate
                "{\"descriptors\":[" + descriptor.replace("}", ",\"x\":1}") + "]," + fields + "}", // an unknown field
                "{\"descriptors\":[" + descriptor + "]," + fields + ",\"x\":1}",
                "{\"descriptors\":[" + descriptor + "]," + fields + "}x", // trailing bytes
                "{\"descriptors\":[" + descriptor + "]," + fields, // truncated
                "{\"descriptors\":[" + descriptor + ",]," + fields + "}", // a trailing comma
                "{\"descriptors\":[" + descriptor + descriptor + "]," + fields + "}", // no comma
                "{\"descriptors\":[" + descriptor + ",," + descriptor + "]," + fields + "}", // two commas
                "{\"descriptors\":[" + descriptor + "," + descriptor + "," + fields + "}", // a list not closed
                "{\"descriptors\":[]," + fields + "}", // refused by validation: Jackson's path words it
                "{\"descriptors\":[" + descriptor.replace("4096", "0") + "]," + fields + "}", // a null pointer
                "{\"descriptors\":[" + descriptor + "]," + fields.replace(":1", ":3") + "}", // a bad kind
                "[1]", "\"text\"", "{}", "")) {
            assertThat(CompactJson.read(json)).as(json).isNull();
        }
    }

    @Test
    void invalidCompactDocumentsFailWithJacksonsWording() {
        String json = "{\"descriptors\":[{\"device\":\"cpu\",\"ptr\":1,\"size\":1}],\"nixl_metadata\":5,"
                + "\"notification_key\":\"k\",\"operation_kind\":1}";
        assertThat(CompactJson.read(json)).isNull();
        assertThatThrownBy(() -> RdmaMetadata.fromJson(json)).isInstanceOf(InvalidMetadataException.class)
                .hasMessageContaining("BigInteger 5");
    }
}
