package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.math.BigInteger;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.json.JsonMapper;

/** The library's JSON reads what Jackson reads (the same values), refuses what it refuses, and escapes as it writes. */
class JsonTest {

    /** Jackson 3's defaults, stated: trailing text refused, integers as BigInteger (normalised below). */
    private static final JsonMapper JACKSON = JsonMapper.builder()
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .enable(DeserializationFeature.USE_BIG_INTEGER_FOR_INTS)
            .build();
    private static final String AGENT = NixlMetadataCodec.encode("agent-metadata".getBytes());

    /** Jackson's value with integers that fit in a long as Long, as {@link Json#read} gives them. */
    private static Object normalised(Object value) {
        if (value instanceof BigInteger big) {
            return big.bitLength() < Long.SIZE ? (Object) big.longValue() : big;
        }
        if (value instanceof Map<?, ?> map) {
            Map<Object, Object> copy = new LinkedHashMap<>();
            map.forEach((k, v) -> copy.put(k, normalised(v)));
            return copy;
        }
        if (value instanceof List<?> list) {
            List<Object> copy = new ArrayList<>();
            list.forEach(v -> copy.add(normalised(v)));
            return copy;
        }
        return value;
    }

    private static Object jackson(String text) {
        return normalised(JACKSON.readValue(text, Object.class));
    }

    private static boolean jacksonAccepts(String text) {
        try {
            JACKSON.readValue(text, Object.class);
            return true;
        } catch (JacksonException e) {
            return false;
        }
    }

    private static boolean accepts(String text) {
        try {
            Json.read(text);
            return true;
        } catch (Json.MalformedException e) {
            return false;
        }
    }

    private static List<String> validDocuments() {
        List<String> documents = new ArrayList<>();
        for (Path file : RdmaMetadataFixturesTest.validVectors()) {
            documents.add(RdmaMetadataFixturesTest.document(file));
        }
        String descriptor = "{\"device\":\"cpu\",\"ptr\":4096,\"size\":16}";
        documents.addAll(List.of(
                "{ \"descriptors\": [" + descriptor + "], \"nixl_metadata\": \"" + AGENT
                        + "\", \"notification_key\": \"k\", \"operation_kind\": 1}",
                "\r\n\t {\"a\" : [ 1 , 2 ] }\n",
                "{\"k\":\"\\u006B\\n\\t\\\"\\\\\\/\\b\\f\\r\\u00e9\\uD83D\\uDD11\"}",
                "{\"k\":\"é ключ 🔑 \u007F\"}",
                "[0, -0, 1, -1, 9223372036854775807, -9223372036854775808, 9223372036854775808,"
                        + " 123456789012345678901234567890, 1.5, -0.25, 1e3, 1E+3, 1e-3, 16.0, 1e400]",
                "[true, false, null, [], {}, [[]], {\"a\":{\"b\":{}}}]",
                "{\"a\":1,\"a\":2}",
                "\"text\"", "42", "null", "true", "[]", "{}", "\"\""));
        return documents;
    }

    @Test
    void readsTheValuesJacksonReads() {
        for (String document : validDocuments()) {
            assertThat(Json.read(document)).as(document).isEqualTo(jackson(document));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"", " ", "{", "}", "[", "[1,]", "[1 2]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "{'a':1}",
        "[01]", "[-]", "[1.]", "[.5]", "[+1]", "[1e]", "[1e+]", "[NaN]", "[Infinity]", "[tru]", "[nul]", "\"abc",
        "\"a\\x\"", "\"\\u12G4\"", "\"\\u12\"", "\"tab\there\"", "{} {}", "{}x", "[1]]", "// c\n{}", "{\"a\":1 /* c */}",
        "{\"descriptors\":[}"})
    void refusesWhatJacksonRefuses(String text) {
        assertThat(jacksonAccepts(text)).as("Jackson refuses %s", text).isFalse();
        assertThat(accepts(text)).as("refuses %s", text).isFalse();
    }

    @Test
    void agreesWithJacksonOnMutatedDocuments() {
        SplittableRandom random = new SplittableRandom(26);
        String alphabet = "{}[]\",:\\ 0123456789-+.eEtrufalsn\u00e9\u0001";
        List<String> seeds = validDocuments();
        for (int round = 0; round < 20_000; round++) {
            StringBuilder text = new StringBuilder(seeds.get(random.nextInt(seeds.size())));
            for (int edits = 1 + random.nextInt(3); edits > 0 && text.length() > 0; edits--) {
                int at = random.nextInt(text.length());
                switch (random.nextInt(3)) {
                    case 0 -> text.deleteCharAt(at);
                    case 1 -> text.insert(at, alphabet.charAt(random.nextInt(alphabet.length())));
                    default -> text.setCharAt(at, alphabet.charAt(random.nextInt(alphabet.length())));
                }
            }
            String mutated = text.toString();
            boolean jackson = jacksonAccepts(mutated);
            assertThat(accepts(mutated)).as("accepts %s", mutated).isEqualTo(jackson);
            if (jackson) {
                assertThat(Json.read(mutated)).as(mutated).isEqualTo(jackson(mutated));
            }
        }
    }

    @Test
    void numbersLongerThanTheLimitAreRefusedBeforeConversion() {
        assertThat(Json.read("[" + "9".repeat(Json.MAX_NUMBER_CHARS) + "]")).isNotNull();
        assertThatThrownBy(() -> Json.read("[" + "9".repeat(Json.MAX_NUMBER_CHARS + 1) + "]"))
                .isInstanceOf(Json.MalformedException.class).hasMessageContaining("limit of " + Json.MAX_NUMBER_CHARS);
    }

    @Test
    void nestingDeeperThanTheLimitIsRefusedWithoutTakingTheStack() {
        assertThat(Json.read("[".repeat(Json.MAX_DEPTH) + "]".repeat(Json.MAX_DEPTH))).isNotNull();
        assertThatThrownBy(() -> Json.read("[".repeat(100_000)))
                .isInstanceOf(Json.MalformedException.class).hasMessageContaining("nesting deeper than " + Json.MAX_DEPTH);
    }

    @Test
    void errorsSayWhereTheyAre() {
        assertThatThrownBy(() -> Json.read("{\"a\":tru}")).hasMessage("unexpected character 't' at character 5");
    }

    @Test
    void escapesEveryCharacterAsJacksonWritesIt() {
        for (char c = 0; c < 0xD800; c++) {
            String text = "a" + c + "b";
            assertThat("\"" + Json.escape(text) + "\"").as("U+%04X", (int) c).isEqualTo(JACKSON.writeValueAsString(text));
        }
        String plain = "b64:eJzz84zwcXR39QuxYmBkYmZhZWPn4OTi5uHl4xcQ";
        assertThat(Json.escape(plain)).isSameAs(plain);
    }

    @Test
    void metadataWritesWhatJacksonWritesAndReadsItBack() {
        SplittableRandom random = new SplittableRandom(5);
        for (int round = 0; round < 500; round++) {
            List<SerializedDescriptor> descriptors = new ArrayList<>();
            for (int i = 0, n = 1 + random.nextInt(4); i < n; i++) {
                String device = random.nextBoolean() ? "cpu" : "cuda:" + random.nextInt(8);
                descriptors.add(new SerializedDescriptor(device, 1 + (random.nextLong(Long.MAX_VALUE - 1) >>> random.nextInt(63)),
                        random.nextLong(Long.MAX_VALUE)));
            }
            String key = random.nextInt(4) == 0 ? "quote \" backslash \\ tab \t é \u0001" : "key-" + random.nextLong();
            RdmaMetadata metadata = new RdmaMetadata(descriptors, AGENT, key,
                    random.nextBoolean() ? OperationKind.READ : OperationKind.WRITE);
            String json = metadata.toJson();
            assertThat(json).isEqualTo(jacksonWrites(metadata));
            assertThat(RdmaMetadata.fromJson(json)).isEqualTo(metadata);
        }
    }

    private static String jacksonWrites(RdmaMetadata metadata) {
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
        return JACKSON.writeValueAsString(map);
    }

    @Test
    void aWrongTypeIsDescribedAsJsonNamesIt() {
        String json = "{\"descriptors\":[{\"device\":\"cpu\",\"ptr\":1,\"size\":1}],\"nixl_metadata\":5,"
                + "\"notification_key\":\"k\",\"operation_kind\":1}";
        assertThatThrownBy(() -> RdmaMetadata.fromJson(json)).isInstanceOf(InvalidMetadataException.class)
                .hasMessageContaining("field 'nixl_metadata' must be a string, was a number 5");
    }
}
