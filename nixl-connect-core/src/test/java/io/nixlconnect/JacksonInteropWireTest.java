package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@link RdmaMetadata} and {@link SerializedDescriptor} travel as REST bodies through an application's
 * own mapper: a plain Jackson 3 {@link JsonMapper} or a plain Jackson 2 {@code ObjectMapper}, neither
 * configured for this library. Both must write exactly {@code toJson()} and read exactly what
 * {@code fromJson} reads, refusing what it refuses, unknown fields included.
 */
class JacksonInteropWireTest {

    /** Jackson 3, defaults (FAIL_ON_UNKNOWN_PROPERTIES is off by default in 3). */
    private static final JsonMapper JACKSON3 = JsonMapper.builder().build();
    /** Jackson 2, defaults. */
    private static final com.fasterxml.jackson.databind.ObjectMapper JACKSON2 =
            new com.fasterxml.jackson.databind.ObjectMapper();
    /** Jackson 2 with unknown properties explicitly tolerated, as many Spring apps configure it. */
    private static final com.fasterxml.jackson.databind.ObjectMapper JACKSON2_LENIENT =
            new com.fasterxml.jackson.databind.ObjectMapper()
                    .configure(com.fasterxml.jackson.databind.DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

    static List<Path> validVectors() {
        return RdmaMetadataFixturesTest.validVectors();
    }

    static List<Path> invalidVectors() {
        return RdmaMetadataFixturesTest.invalidVectors();
    }

    private static String doc(Path file) {
        return RdmaMetadataFixturesTest.document(file);
    }

    @Test
    void jackson3DefaultsReallyIgnoreUnknownProperties() {
        // the premise of the unknown-field tests below: the plain Jackson 3 mapper does not fail by itself
        assertThat(JACKSON3.isEnabled(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)).isFalse();
    }

    // ---- serialisation ----

    @ParameterizedTest(name = "{0}")
    @MethodSource("validVectors")
    void bothMappersWriteExactlyToJson(Path file) throws Exception {
        RdmaMetadata metadata = RdmaMetadata.fromJson(doc(file));
        String expected = metadata.toJson();
        assertThat(JACKSON3.writeValueAsString(metadata)).isEqualTo(expected);
        assertThat(JACKSON2.writeValueAsString(metadata)).isEqualTo(expected);
        assertThat(new String(JACKSON3.writeValueAsBytes(metadata), java.nio.charset.StandardCharsets.UTF_8))
                .isEqualTo(expected);
    }

    @Test
    void bothMappersWriteSerializedDescriptorCompactInWireOrder() throws Exception {
        SerializedDescriptor descriptor = new SerializedDescriptor(" CUDA ", 139637976727552L, 34359738368L);
        // the device as Python's validate_device leaves it: trimmed and lower-cased
        String expected = "{\"device\":\"cuda\",\"ptr\":139637976727552,\"size\":34359738368}";
        assertThat(JACKSON3.writeValueAsString(descriptor)).isEqualTo(expected);
        assertThat(JACKSON2.writeValueAsString(descriptor)).isEqualTo(expected);
        assertThat(JACKSON3.writeValueAsString(List.of(descriptor))).isEqualTo("[" + expected + "]");
    }

    @Test
    void metadataInsideAnApplicationBodySerialisesTheSame() throws Exception {
        RdmaMetadata metadata = RdmaMetadata.fromJson(doc(RdmaMetadataFixturesTest.fixtureDir()
                .resolve("valid-write-multi-cuda.json")));
        String expected = "{\"request\":" + metadata.toJson() + "}";
        assertThat(JACKSON3.writeValueAsString(Map.of("request", metadata))).isEqualTo(expected);
        assertThat(JACKSON2.writeValueAsString(Map.of("request", metadata))).isEqualTo(expected);
    }

    // ---- deserialisation of valid vectors ----

    @ParameterizedTest(name = "{0}")
    @MethodSource("validVectors")
    void bothMappersReadValidVectorsToAnEqualObject(Path file) throws Exception {
        RdmaMetadata expected = RdmaMetadata.fromJson(doc(file));
        RdmaMetadata viaJackson3 = JACKSON3.readValue(doc(file), RdmaMetadata.class);
        RdmaMetadata viaJackson2 = JACKSON2.readValue(doc(file), RdmaMetadata.class);
        assertThat(viaJackson3).isEqualTo(expected).hasSameHashCodeAs(expected);
        assertThat(viaJackson2).isEqualTo(expected).hasSameHashCodeAs(expected);
        assertThat(viaJackson3.decodeNixlMetadata()).isEqualTo(RdmaMetadataFixturesTest.agentMetadata());
        assertThat(viaJackson2.decodeNixlMetadata()).isEqualTo(RdmaMetadataFixturesTest.agentMetadata());
        assertThat(viaJackson3.toJson()).isEqualTo(expected.toJson());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("validVectors")
    void bothMappersReadEachDescriptorOfValidVectors(Path file) throws Exception {
        RdmaMetadata expected = RdmaMetadata.fromJson(doc(file));
        tools.jackson.databind.JsonNode descriptors = JACKSON3.readTree(doc(file)).get("descriptors");
        for (int i = 0; i < descriptors.size(); i++) {
            String json = JACKSON3.writeValueAsString(descriptors.get(i));
            assertThat(JACKSON3.readValue(json, SerializedDescriptor.class)).isEqualTo(expected.descriptors().get(i));
            assertThat(JACKSON2.readValue(json, SerializedDescriptor.class)).isEqualTo(expected.descriptors().get(i));
        }
    }

    // ---- refusal of invalid vectors ----

    @ParameterizedTest(name = "{0}")
    @MethodSource("invalidVectors")
    void jackson3RefusesInvalidVectors(Path file) {
        assertRefused(catchThrowable(() -> JACKSON3.readValue(doc(file), RdmaMetadata.class)), file);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("invalidVectors")
    void jackson2RefusesInvalidVectors(Path file) {
        assertRefused(catchThrowable(() -> JACKSON2.readValue(doc(file), RdmaMetadata.class)), file);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("invalidVectors")
    void lenientJackson2StillRefusesInvalidVectors(Path file) {
        assertRefused(catchThrowable(() -> JACKSON2_LENIENT.readValue(doc(file), RdmaMetadata.class)), file);
    }

    /** Refused; where the document is JSON, the cause is an {@link InvalidMetadataException} naming the field. */
    private static void assertRefused(Throwable thrown, Path file) {
        String name = file.getFileName().toString();
        assertThat(thrown).as("%s must be refused", name).isNotNull();
        if (name.equals("invalid-not-json.json")) {
            return; // a parse error of the mapper's own
        }
        InvalidMetadataException cause = invalidMetadataIn(thrown);
        assertThat(cause).as("%s: an InvalidMetadataException in the cause chain of %s", name, thrown).isNotNull();
        assertThat(thrown.getMessage()).as("the mapper's message names the problem").contains(cause.field());
    }

    private static InvalidMetadataException invalidMetadataIn(Throwable thrown) {
        for (Throwable t = thrown; t != null; t = t.getCause()) {
            if (t instanceof InvalidMetadataException e) {
                return e;
            }
        }
        return null;
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "{\"device\":\"cpu\",\"ptr\":4096,\"size\":16,\"dtype\":\"f16\"}",
        "{\"device\":\"cpu\",\"ptr\":4096,\"size\":16,\"extra\":null}",
        "{\"device\":\"cpu\",\"ptr\":4096,\"size\":16,\"nested\":{\"a\":1}}"})
    void bothMappersRefuseUnknownDescriptorFields(String json) {
        assertThat(invalidMetadataIn(catchThrowable(() -> JACKSON3.readValue(json, SerializedDescriptor.class))))
                .as("Jackson 3").isNotNull();
        assertThat(invalidMetadataIn(catchThrowable(() -> JACKSON2.readValue(json, SerializedDescriptor.class))))
                .as("Jackson 2").isNotNull();
        assertThat(invalidMetadataIn(catchThrowable(() -> JACKSON2_LENIENT.readValue(json, SerializedDescriptor.class))))
                .as("lenient Jackson 2").isNotNull();
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "{\"ptr\":4096,\"size\":16}",
        "{\"device\":\"cpu\",\"size\":16}",
        "{\"device\":\"cpu\",\"ptr\":4096}",
        "{\"device\":null,\"ptr\":4096,\"size\":16}",
        "{\"device\":\"cpu\",\"ptr\":null,\"size\":16}",
        "{\"device\":\"cpu\",\"ptr\":0,\"size\":16}",
        "{\"device\":\"cpu\",\"ptr\":4096,\"size\":-1}",
        "{\"device\":\"gpu:1\",\"ptr\":4096,\"size\":16}",
        "{\"device\":\"tpu\",\"ptr\":4096,\"size\":16}",
        "{\"device\":7,\"ptr\":4096,\"size\":16}",
        "{\"device\":\"cpu\",\"ptr\":\"abc\",\"size\":16}",
        "{\"device\":\"cpu\",\"ptr\":[4096],\"size\":16}",
        "{\"device\":\"cpu\",\"ptr\":9223372036854775808,\"size\":16}"})
    void bothMappersRefuseBrokenDescriptors(String json) {
        InvalidMetadataException direct = invalidMetadataIn(catchThrowable(() -> JACKSON3.readValue(json, SerializedDescriptor.class)));
        assertThat(direct).as("Jackson 3 refuses %s", json).isNotNull();
        InvalidMetadataException viaJackson2 = invalidMetadataIn(catchThrowable(() -> JACKSON2.readValue(json, SerializedDescriptor.class)));
        assertThat(viaJackson2).as("Jackson 2 refuses %s", json).isNotNull();
        assertThat(viaJackson2.field()).isEqualTo(direct.field());
    }

    @Test
    void unknownFieldsOfNestedDescriptorsAreRefusedByBothMappers() {
        String json = doc(RdmaMetadataFixturesTest.fixtureDir().resolve("invalid-extra-descriptor-field.json"));
        assertThat(invalidMetadataIn(catchThrowable(() -> JACKSON3.readValue(json, RdmaMetadata.class))).field())
                .isEqualTo("descriptors[0].dtype");
        assertThat(invalidMetadataIn(catchThrowable(() -> JACKSON2.readValue(json, RdmaMetadata.class))).field())
                .isEqualTo("descriptors[0].dtype");
    }

    @Test
    void unknownTopLevelFieldIsNamedByBothMappers() {
        String json = doc(RdmaMetadataFixturesTest.fixtureDir().resolve("invalid-extra-field.json"));
        assertThat(invalidMetadataIn(catchThrowable(() -> JACKSON3.readValue(json, RdmaMetadata.class))).field())
                .isEqualTo("extra");
        assertThat(invalidMetadataIn(catchThrowable(() -> JACKSON2.readValue(json, RdmaMetadata.class))).field())
                .isEqualTo("extra");
    }

    @Test
    void bothMappersRoundTripTheirOwnOutput() throws Exception {
        for (Path file : validVectors()) {
            RdmaMetadata metadata = RdmaMetadata.fromJson(doc(file));
            assertThat(JACKSON3.readValue(JACKSON3.writeValueAsString(metadata), RdmaMetadata.class)).isEqualTo(metadata);
            assertThat(JACKSON2.readValue(JACKSON2.writeValueAsString(metadata), RdmaMetadata.class)).isEqualTo(metadata);
        }
    }
}
