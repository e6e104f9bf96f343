package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link RdmaMetadata#fromJson} reads the text straight into its values; an application's mapper hands its plain
 * values to {@link RdmaMetadata#fromTree}. Both must accept the same documents as the same metadata and refuse the
 * same documents with the same message, including documents that break several rules at once or repeat a field.
 */
class RdmaMetadataReadersAgreeTest {

    private static final String AGENT = NixlMetadataCodec.encode("agent-metadata".getBytes());
    private static final String DESCRIPTOR = "{\"device\":\"cpu\",\"ptr\":4096,\"size\":16}";

    /** What fromJson does with the text: the metadata's JSON, or the refusal's message. */
    private static String direct(String json) {
        try {
            return RdmaMetadata.fromJson(json).toJson();
        } catch (InvalidMetadataException e) {
            return "refused: " + e.getMessage();
        }
    }

    /** The same text through the plain values and fromTree, as a mapper binds it. */
    private static String throughTree(String json) {
        Object tree;
        try {
            tree = Json.read(json);
        } catch (Json.MalformedException e) {
            return "refused: " + new InvalidMetadataException("(document)", "is not valid JSON: " + e.getMessage())
                    .getMessage();
        }
        try {
            return RdmaMetadata.fromTree(tree).toJson();
        } catch (InvalidMetadataException e) {
            return "refused: " + e.getMessage();
        }
    }

    private static String document(String descriptors, String rest) {
        return "{\"descriptors\":" + descriptors + ",\"nixl_metadata\":\"" + AGENT + "\"" + rest + "}";
    }

    @ParameterizedTest
    @ValueSource(strings = {
        // several rules broken at once: the first in the one order of checks is named
        "{\"extra\":1,\"descriptors\":[{\"device\":\"gpu\",\"ptr\":0,\"size\":-1}],\"operation_kind\":9}",
        "{\"descriptors\":[{\"device\":\"gpu\",\"ptr\":0,\"size\":-1,\"dtype\":1}],\"operation_kind\":9}",
        "{\"descriptors\":[{\"device\":\"cpu\",\"ptr\":\"x\",\"size\":-1}],\"notification_key\":5}",
        "{\"descriptors\":[{\"ptr\":1},{\"device\":\"cpu\",\"ptr\":0,\"size\":1}],\"extra\":{\"a\":[1]}}",
        "{\"descriptors\":[1,{\"device\":\"cpu\",\"ptr\":0,\"size\":1}]}",
        "{\"descriptors\":[{\"device\":\"cpu\",\"ptr\":1,\"size\":1},null],\"notification_key\":\"\"}",
        "{\"descriptors\":[{\"device\":\"cpu\",\"ptr\":0,\"size\":1}] \"nixl_metadata\":1}",
        "{\"descriptors\":[{\"device\":\"cpu\",\"ptr\":0,\"size\":1},{]}",
        "{\"descriptors\":[],\"operation_kind\":\"3\"}",
        "{\"descriptors\":{},\"nixl_metadata\":null}",
        "[{\"descriptors\":[]}]",
        "{}",
        // repeated fields: the last value counts, the earlier one is only read as JSON
        "{\"descriptors\":[{\"device\":\"gpu\",\"ptr\":0,\"size\":1}],\"descriptors\":[" + DESCRIPTOR
                + "],\"nixl_metadata\":\"" + "b64:eJzz84zwcXR39QuxYmBkYmZhZWPn4OTi5uHl4xcQ\",\"notification_key\":\"k\","
                + "\"operation_kind\":1}",
        "{\"descriptors\":[" + DESCRIPTOR + "],\"descriptors\":null}",
        "{\"descriptors\":[{\"device\":\"cpu\",\"ptr\":0,\"ptr\":4096,\"size\":\"x\",\"size\":16}],"
                + "\"operation_kind\":1,\"operation_kind\":2}",
        // numbers and strings where integers are expected
        "{\"descriptors\":[{\"device\":\"cpu\",\"ptr\":9223372036854775807,\"size\":1e2}]}",
        "{\"descriptors\":[{\"device\":\"cpu\",\"ptr\":123456789012345678901234567890,\"size\":1}]}",
        "{\"descriptors\":[{\"device\":\"cpu\",\"ptr\":-0,\"size\":1}]}",
        "{\"descriptors\":[{\"device\":\"cpu\",\"ptr\":01,\"size\":1}]}",
        "{\"descriptors\":[{\"device\":\"cpu\",\"ptr\":1.5e3,\"size\":\" 16 \"}]}"})
    void refuseOrAcceptAlike(String json) {
        String withRest = json.startsWith("{\"descriptors\"") && !json.contains("nixl_metadata")
                ? json.substring(0, json.length() - 1) + ",\"nixl_metadata\":\"" + AGENT + "\",\"notification_key\":\"k\"}"
                : json;
        for (String text : List.of(json, withRest)) {
            assertThat(direct(text)).as(text).isEqualTo(throughTree(text));
        }
    }

    @Test
    void parsedDescriptorListsAreUnmodifiable() {
        String one = document("[" + DESCRIPTOR + "]", ",\"notification_key\":\"k\",\"operation_kind\":1");
        String three = document("[" + DESCRIPTOR + "," + DESCRIPTOR + "," + DESCRIPTOR + "]",
                ",\"notification_key\":\"k\",\"operation_kind\":1");
        SerializedDescriptor extra = new SerializedDescriptor("cpu", 1, 1);
        for (String json : List.of(one, three)) {
            for (RdmaMetadata metadata : List.of(RdmaMetadata.fromJson(json), RdmaMetadata.fromTree(Json.read(json)))) {
                List<SerializedDescriptor> descriptors = metadata.descriptors();
                assertThatThrownBy(() -> descriptors.add(extra)).isInstanceOf(UnsupportedOperationException.class);
                assertThatThrownBy(() -> descriptors.set(0, extra)).isInstanceOf(UnsupportedOperationException.class);
                assertThatThrownBy(() -> descriptors.remove(0)).isInstanceOf(UnsupportedOperationException.class);
            }
        }
        assertThat(RdmaMetadata.fromJson(three).descriptors()).hasSize(3);
    }

    @Test
    void agreeOnMutatedDocuments() {
        List<String> seeds = new ArrayList<>();
        for (Path file : RdmaMetadataFixturesTest.validVectors()) {
            seeds.add(RdmaMetadataFixturesTest.document(file));
        }
        for (Path file : RdmaMetadataFixturesTest.invalidVectors()) {
            seeds.add(RdmaMetadataFixturesTest.document(file));
        }
        seeds.add(document("[" + DESCRIPTOR + "," + DESCRIPTOR.replace("4096", "8192") + "]",
                ",\"notification_key\":\"k\",\"operation_kind\":2"));
        SplittableRandom random = new SplittableRandom(2026);
        String alphabet = "{}[]\",:\\ 0123456789-+.eE\u00e9";
        String[] pieces = {"\"ptr\":", "\"size\":", "\"device\":", "\"extra\":", "null", "\"cpu\"", "\"cuda:1\"", "-1",
            "\"descriptors\":", "\"operation_kind\":", "\"notification_key\":", "\"nixl_metadata\":", "[]", "{}", "1.5"};
        int refused = 0;
        for (int round = 0; round < 20_000; round++) {
            StringBuilder text = new StringBuilder(seeds.get(random.nextInt(seeds.size())));
            for (int edits = 1 + random.nextInt(3); edits > 0 && text.length() > 0; edits--) {
                int at = random.nextInt(text.length());
                switch (random.nextInt(4)) {
                    case 0 -> text.deleteCharAt(at);
                    case 1 -> text.insert(at, alphabet.charAt(random.nextInt(alphabet.length())));
                    case 2 -> text.insert(at, pieces[random.nextInt(pieces.length)]);
                    default -> text.setCharAt(at, alphabet.charAt(random.nextInt(alphabet.length())));
                }
            }
            String mutated = text.toString();
            String expected = throughTree(mutated);
            assertThat(direct(mutated)).as(mutated).isEqualTo(expected);
            if (expected.startsWith("refused: ") && !expected.contains("is not valid JSON")) {
                refused++;
            }
        }
        assertThat(refused).as("documents that are JSON but break a rule").isGreaterThan(1_000);
    }
}
