package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/** The wire format's rules, one by one, as {@link RdmaMetadata#fromJson(String)} and the constructor apply them. */
class RdmaMetadataValidationWireTest {

    private static final JsonMapper TREE = JsonMapper.builder().build();
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    private static final String METADATA = NixlMetadataCodec.encode("NIXLAGENT:test".getBytes());

    /** A valid document: one cpu descriptor, READ. */
    private static ObjectNode base() {
        ObjectNode doc = NODES.objectNode();
        ArrayNode descriptors = doc.putArray("descriptors");
        ObjectNode d = descriptors.addObject();
        d.put("device", "cpu");
        d.put("ptr", 4096);
        d.put("size", 16);
        doc.put("nixl_metadata", METADATA);
        doc.put("notification_key", "k");
        doc.put("operation_kind", 1);
        return doc;
    }

    private static ObjectNode descriptor0(ObjectNode doc) {
        return (ObjectNode) doc.get("descriptors").get(0);
    }

    private static InvalidMetadataException refused(String json) {
        InvalidMetadataException e = catchThrowableOfType(InvalidMetadataException.class, () -> RdmaMetadata.fromJson(json));
        assertThat(e).as("refused: %s", json).isNotNull();
        assertThat(e.getMessage()).startsWith("Invalid RdmaMetadata: field '" + e.field() + "' ");
        return e;
    }

    private static InvalidMetadataException refused(ObjectNode doc) {
        return refused(TREE.writeValueAsString(doc));
    }

    @Test
    void baseDocumentIsValid() {
        RdmaMetadata metadata = RdmaMetadata.fromJson(TREE.writeValueAsString(base()));
        assertThat(metadata.operationKind()).isEqualTo(OperationKind.READ);
        assertThat(metadata.toJson()).isEqualTo(TREE.writeValueAsString(base()));
    }

    // ---- document level ----

    @ParameterizedTest
    @ValueSource(strings = {"", " ", "null", "[]", "\"text\"", "42", "{", "{\"descriptors\":[}", "true"})
    void nonObjectDocumentsAreRefused(String json) {
        assertThat(refused(json).field()).isEqualTo("(document)");
    }

    @Test
    void nullDocumentIsRefused() {
        assertThat(refused((String) null).field()).isEqualTo("(document)");
    }

    // ---- missing and null fields ----

    static Stream<String> topLevelFields() {
        return Stream.of("descriptors", "nixl_metadata", "notification_key", "operation_kind");
    }

    @ParameterizedTest
    @MethodSource("topLevelFields")
    void missingTopLevelFieldIsNamed(String field) {
        ObjectNode doc = base();
        doc.remove(field);
        InvalidMetadataException e = refused(doc);
        assertThat(e.field()).isEqualTo(field);
        assertThat(e.getMessage()).contains("is required");
    }

    @ParameterizedTest
    @MethodSource("topLevelFields")
    void nullTopLevelFieldIsNamed(String field) {
        ObjectNode doc = base();
        doc.putNull(field);
        assertThat(refused(doc).field()).isEqualTo(field);
    }

    @ParameterizedTest
    @ValueSource(strings = {"device", "ptr", "size"})
    void missingDescriptorFieldIsNamed(String field) {
        ObjectNode doc = base();
        descriptor0(doc).remove(field);
        InvalidMetadataException e = refused(doc);
        assertThat(e.field()).isEqualTo("descriptors[0]." + field);
        assertThat(e.getMessage()).contains("is required");
    }

    @ParameterizedTest
    @ValueSource(strings = {"device", "ptr", "size"})
    void nullDescriptorFieldIsNamed(String field) {
        ObjectNode doc = base();
        descriptor0(doc).putNull(field);
        InvalidMetadataException e = refused(doc);
        assertThat(e.field()).isEqualTo("descriptors[0]." + field);
        assertThat(e.getMessage()).contains("null");
    }

    // ---- wrong JSON types ----

    static Stream<Arguments> wrongTypes() {
        return Stream.of(
                Arguments.of("descriptors", NODES.objectNode().put("device", "cpu").put("ptr", 4096).put("size", 16), "descriptors", "array"),
                Arguments.of("descriptors", NODES.stringNode("cpu"), "descriptors", "array"),
                Arguments.of("descriptors", NODES.numberNode(1), "descriptors", "array"),
                Arguments.of("nixl_metadata", NODES.numberNode(12), "nixl_metadata", "string"),
                Arguments.of("nixl_metadata", NODES.arrayNode().add("b64:"), "nixl_metadata", "string"),
                Arguments.of("nixl_metadata", NODES.objectNode(), "nixl_metadata", "string"),
                Arguments.of("notification_key", NODES.numberNode(7), "notification_key", "string"),
                Arguments.of("notification_key", NODES.booleanNode(true), "notification_key", "string"),
                Arguments.of("operation_kind", NODES.stringNode("READ"), "operation_kind", "integer"),
                Arguments.of("operation_kind", NODES.arrayNode().add(1), "operation_kind", "integer"),
                Arguments.of("operation_kind", NODES.objectNode().put("value", 1), "operation_kind", "integer"),
                Arguments.of("operation_kind", NODES.numberNode(1.5), "operation_kind", "integer"),
                Arguments.of("operation_kind", NODES.booleanNode(true), "operation_kind", "integer"));
    }

    @ParameterizedTest(name = "{0} = {1}")
    @MethodSource("wrongTypes")
    void wrongTopLevelTypeIsNamed(String field, JsonNode value, String expectedField, String expectedWord) {
        ObjectNode doc = base();
        doc.set(field, value);
        InvalidMetadataException e = refused(doc);
        assertThat(e.field()).isEqualTo(expectedField);
        assertThat(e.getMessage()).contains(expectedWord);
    }

    static Stream<Arguments> wrongDescriptorTypes() {
        return Stream.of(
                Arguments.of("device", NODES.numberNode(0), "string"),
                Arguments.of("device", NODES.arrayNode().add("cpu"), "string"),
                Arguments.of("device", NODES.objectNode(), "string"),
                Arguments.of("ptr", NODES.stringNode("abc"), "integer"),
                Arguments.of("ptr", NODES.stringNode("0x1000"), "integer"),
                Arguments.of("ptr", NODES.stringNode(""), "integer"),
                Arguments.of("ptr", NODES.arrayNode().add(4096), "integer"),
                Arguments.of("ptr", NODES.objectNode().put("a", 1), "integer"),
                Arguments.of("ptr", NODES.numberNode(4096.5), "integer"),
                Arguments.of("ptr", NODES.booleanNode(true), "integer"),
                Arguments.of("size", NODES.stringNode("sixteen"), "integer"),
                Arguments.of("size", NODES.arrayNode(), "integer"),
                Arguments.of("size", NODES.numberNode(1.25), "integer"));
    }

    @ParameterizedTest(name = "{0} = {1}")
    @MethodSource("wrongDescriptorTypes")
    void wrongDescriptorTypeIsNamed(String field, JsonNode value, String expectedWord) {
        ObjectNode doc = base();
        descriptor0(doc).set(field, value);
        InvalidMetadataException e = refused(doc);
        assertThat(e.field()).isEqualTo("descriptors[0]." + field);
        assertThat(e.getMessage()).contains(expectedWord);
    }

    @ParameterizedTest
    @ValueSource(strings = {"\"cpu\"", "4096", "[]", "null", "true"})
    void descriptorThatIsNotAnObjectIsRefused(String element) {
        String json = TREE.writeValueAsString(base()).replaceFirst("\\[\\{[^}]*\\}\\]", "[" + element + "]");
        assertThat(json).contains("\"descriptors\":[" + element + "]");
        InvalidMetadataException e = refused(json);
        assertThat(e.field()).isEqualTo("descriptors[0]");
    }

    @Test
    void laxIntegersAreAcceptedLikePydantic() {
        // pydantic v2 lax mode: integral floats and decimal strings are integers
        ObjectNode doc = base();
        descriptor0(doc).put("ptr", "4096");
        descriptor0(doc).put("size", 16.0);
        doc.put("operation_kind", "2");
        RdmaMetadata metadata = RdmaMetadata.fromJson(TREE.writeValueAsString(doc));
        assertThat(metadata.descriptors().get(0).ptr()).isEqualTo(4096);
        assertThat(metadata.descriptors().get(0).size()).isEqualTo(16);
        assertThat(metadata.operationKind()).isEqualTo(OperationKind.WRITE);
        // and written back as JSON integers
        assertThat(metadata.toJson()).contains("\"ptr\":4096,\"size\":16").endsWith("\"operation_kind\":2}");
    }

    // ---- operation_kind ----

    @ParameterizedTest
    @ValueSource(strings = {"0", "3", "4", "-1", "5", "2147483647", "2147483648", "4294967297", "-9223372036854775808",
        "9223372036854775807", "9223372036854775808", "18446744073709551617", "100000000000000000000000000000000000000"})
    void operationKindOtherThanReadOrWriteIsRefused(String value) {
        String json = TREE.writeValueAsString(base()).replace("\"operation_kind\":1", "\"operation_kind\":" + value);
        assertThat(json).endsWith("\"operation_kind\":" + value + "}");
        InvalidMetadataException e = refused(json);
        assertThat(e.field()).isEqualTo("operation_kind");
        assertThat(e.getMessage()).containsAnyOf("must be 1 (READ) or 2 (WRITE)", "64-bit range");
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2})
    void operationKindReadAndWriteAreAccepted(int kind) {
        RdmaMetadata metadata = RdmaMetadata.fromJson(TREE.writeValueAsString(base().put("operation_kind", kind)));
        assertThat(metadata.operationKind().value()).isEqualTo(kind);
    }

    @Test
    void constructorRefusesUnspecifiedOrNullKind() {
        List<SerializedDescriptor> d = List.of(new SerializedDescriptor("cpu", 4096, 16));
        assertThat(catchThrowableOfType(InvalidMetadataException.class,
                () -> new RdmaMetadata(d, METADATA, "k", OperationKind.UNSPECIFIED)).field()).isEqualTo("operation_kind");
        assertThat(catchThrowableOfType(InvalidMetadataException.class,
                () -> new RdmaMetadata(d, METADATA, "k", null)).field()).isEqualTo("operation_kind");
    }

    @Test
    void constructorRefusesMissingParts() {
        List<SerializedDescriptor> d = List.of(new SerializedDescriptor("cpu", 4096, 16));
        assertThat(catchThrowableOfType(InvalidMetadataException.class,
                () -> new RdmaMetadata(null, METADATA, "k", OperationKind.READ)).field()).isEqualTo("descriptors");
        assertThat(catchThrowableOfType(InvalidMetadataException.class,
                () -> new RdmaMetadata(List.of(), METADATA, "k", OperationKind.READ)).field()).isEqualTo("descriptors");
        List<SerializedDescriptor> withNull = new ArrayList<>(d);
        withNull.add(null);
        assertThat(catchThrowableOfType(InvalidMetadataException.class,
                () -> new RdmaMetadata(withNull, METADATA, "k", OperationKind.READ)).field()).isEqualTo("descriptors[1]");
        assertThat(catchThrowableOfType(InvalidMetadataException.class,
                () -> new RdmaMetadata(d, null, "k", OperationKind.READ)).field()).isEqualTo("nixl_metadata");
        assertThat(catchThrowableOfType(InvalidMetadataException.class,
                () -> new RdmaMetadata(d, METADATA, null, OperationKind.READ)).field()).isEqualTo("notification_key");
        assertThatThrownBy(() -> RdmaMetadata.of(d, new byte[0], "k", OperationKind.READ))
                .isInstanceOf(InvalidMetadataException.class);
    }

    // ---- ptr and size ----

    @ParameterizedTest
    @ValueSource(strings = {"0", "-1", "-4096", "-9223372036854775808", "9223372036854775808", "18446744073709551615",
        "1e30", "0.0", "-0"})
    void badPointerIsRefused(String value) {
        String json = TREE.writeValueAsString(base()).replace("\"ptr\":4096", "\"ptr\":" + value);
        InvalidMetadataException e = refused(json);
        assertThat(e.field()).isEqualTo("descriptors[0].ptr");
    }

    @ParameterizedTest
    @ValueSource(strings = {"1", "4096", "9223372036854775807", "140737488289792"})
    void goodPointerIsKept(String value) {
        RdmaMetadata metadata = RdmaMetadata.fromJson(TREE.writeValueAsString(base()).replace("\"ptr\":4096", "\"ptr\":" + value));
        assertThat(metadata.descriptors().get(0).ptr()).isEqualTo(Long.parseLong(value));
        assertThat(metadata.toJson()).contains("\"ptr\":" + value + ",");
    }

    @ParameterizedTest
    @ValueSource(strings = {"-1", "-9223372036854775808", "9223372036854775808"})
    void badSizeIsRefused(String value) {
        InvalidMetadataException e = refused(TREE.writeValueAsString(base()).replace("\"size\":16", "\"size\":" + value));
        assertThat(e.field()).isEqualTo("descriptors[0].size");
    }

    @Test
    void totalSizeOverflowIsNotSilent() {
        List<SerializedDescriptor> d = List.of(new SerializedDescriptor("cpu", 4096, Long.MAX_VALUE),
                new SerializedDescriptor("cpu", 8192, 1));
        RdmaMetadata metadata = new RdmaMetadata(d, METADATA, "k", OperationKind.READ);
        assertThatThrownBy(metadata::totalSize).isInstanceOf(ArithmeticException.class);
        assertThat(new RdmaMetadata(List.of(new SerializedDescriptor("cpu", 4096, 10), new SerializedDescriptor("cpu", 8192, 5)),
                METADATA, "k", OperationKind.READ).totalSize()).isEqualTo(15);
    }

    // ---- devices inside documents ----

    @ParameterizedTest
    @ValueSource(strings = {" CUDA:3 ", "cuda:3", "Cuda:3", "\tcuda:3\n"})
    void deviceIsNormalised(String device) {
        ObjectNode doc = base();
        descriptor0(doc).put("device", device);
        RdmaMetadata metadata = RdmaMetadata.fromJson(TREE.writeValueAsString(doc));
        assertThat(metadata.descriptors().get(0).device()).isEqualTo("cuda:3");
        assertThat(metadata.toJson()).contains("\"device\":\"cuda:3\"");
    }

    @Test
    void xpuDescriptorsFromAPythonXpuProducerAreRead() {
        ObjectNode doc = base();
        descriptor0(doc).put("device", "xpu:1");
        SerializedDescriptor read = RdmaMetadata.fromJson(TREE.writeValueAsString(doc)).descriptors().get(0);
        assertThat(read.device()).isEqualTo("xpu:1");
        assertThat(read.toDevice()).isEqualTo(Device.xpu(1));
        assertThat(read.toDevice().kind().value()).isEqualTo(3);
    }

    @Test
    void bareCudaMeansDeviceZero() {
        ObjectNode doc = base();
        descriptor0(doc).put("device", "cuda");
        SerializedDescriptor read = RdmaMetadata.fromJson(TREE.writeValueAsString(doc)).descriptors().get(0);
        assertThat(read.device()).isEqualTo("cuda");
        assertThat(read.toDevice()).isEqualTo(Device.cuda(0));
    }

    @ParameterizedTest
    @ValueSource(strings = {"gpu:1", "gpu", "host", "tpu", "tpu:0", "cuda:x", "cuda:-1", "cuda:", "cudax", "cuda:1:2",
        "cuda 1", "", " ", "cpu:x", "mps", "xpu:"})
    void unsupportedDeviceIsRefused(String device) {
        ObjectNode doc = base();
        descriptor0(doc).put("device", device);
        InvalidMetadataException e = refused(doc);
        assertThat(e.field()).isEqualTo("descriptors[0].device");
        assertThat(e.getMessage()).contains("'cpu', 'cuda:N' or 'xpu:N'").contains("'" + device + "'");
    }

    // ---- notification_key and nixl_metadata ----

    @ParameterizedTest
    @ValueSource(strings = {"", " ", "\t", "b64:", "b64: ", "b64:@@@", "b64:eJz", "B64:eJzz", "b64", "zz", "abc",
        "b64:b64:" + "eJzz84zwcXR39QuxYmBkYmZhZWPn4OTi5uHl4xcQFBIWERUTl5CUkpaRlZNXUFRSVlFVU9fQ1NLW0dXTNzA0MjYxNTO3sLSytrG1s3dwdHJ2cXVz9/D08vbx9fMPCAwKDgkNC4+IjIqOiY2LT0hMSk5JTUvPyMzKzsnNyy8oLCouKS0rr6isqq6pratvaGxqbmlta+/o7Oru6e3rnzBx0uQpU6dNnzFz1uw5c+fNX7Bw0eIlS5ctX7Fy1eo1a9et37Bx0+YtW7dt37Fz1+49e/ftP3Dw0OEjR48dP3Hy1OkzZ8+dv3Dx0uUrV69dv3Hz1u07d+/df/Dw0eMnT589f/Hy1es3b9+9//Dx0+cvX799//Hz1+8/f//9H/X/yPY/AF0tgXQ="})
    void badNixlMetadataIsRefused(String value) {
        InvalidMetadataException e = refused(base().put("nixl_metadata", value));
        assertThat(e.field()).isEqualTo("nixl_metadata");
    }

    // ---- unknown fields ----

    @ParameterizedTest
    @ValueSource(strings = {"extra", "Descriptors", "operationKind", ""})
    void unknownTopLevelFieldIsRefused(String name) {
        InvalidMetadataException e = refused(base().put(name, 1));
        assertThat(e.field()).isEqualTo(name);
        assertThat(e.getMessage()).contains("not allowed");
    }

    // ---- one rule per row: the document breaks it, the refusal names the field and says why ----

    static Stream<Arguments> refusals() {
        return Stream.of(
                refusal("an error in a later descriptor is located by its index", doc -> {
                    ObjectNode second = ((ArrayNode) doc.get("descriptors")).addObject();
                    second.put("device", "cpu");
                    second.put("ptr", 8192);
                    second.put("size", -5);
                }, "descriptors[1].size", "-5"),
                refusal("a null descriptor element", doc -> ((ArrayNode) doc.get("descriptors")).addNull(),
                        "descriptors[1]", "null"),
                refusal("an empty descriptor list", doc -> doc.putArray("descriptors"), "descriptors", "at least one"),
                refusal("operation_kind 3, which Python's validator accepts", doc -> doc.put("operation_kind", 3),
                        "operation_kind", "must be 1 (READ) or 2 (WRITE), was 3"),
                refusal("a null pointer", doc -> descriptor0(doc).put("ptr", 0), "descriptors[0].ptr", "must not be 0"),
                refusal("a negative size", doc -> descriptor0(doc).put("size", -1), "descriptors[0].size", ">= 0"),
                refusal("a negative size names the value", doc -> descriptor0(doc).put("size", -1), "descriptors[0].size",
                        "-1"),
                refusal("an empty notification key", doc -> doc.put("notification_key", ""), "notification_key",
                        "must not be empty"),
                refusal("an unknown descriptor field", doc -> descriptor0(doc).put("dtype", "f16"),
                        "descriptors[0].dtype", "not allowed"));
    }

    private static Arguments refusal(String rule, Consumer<ObjectNode> breakIt, String field, String says) {
        return Arguments.of(rule, breakIt, field, says);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("refusals")
    void aBrokenRuleIsRefusedNamingTheFieldAndWhy(String rule, Consumer<ObjectNode> breakIt, String field, String says) {
        ObjectNode doc = base();
        breakIt.accept(doc);
        InvalidMetadataException e = refused(doc);
        assertThat(e.field()).as(rule).isEqualTo(field);
        assertThat(e.getMessage()).as(rule).contains(says);
    }

    @ParameterizedTest
    @MethodSource("unusualNotificationKeys")
    void unusualNotificationKeysAreKeptVerbatim(String key) {
        RdmaMetadata metadata = RdmaMetadata.fromJson(TREE.writeValueAsString(base().put("notification_key", key)));
        assertThat(metadata.notificationKey()).isEqualTo(key);
        assertThat(RdmaMetadata.fromJson(metadata.toJson())).isEqualTo(metadata);
    }

    static Stream<String> unusualNotificationKeys() {
        return Stream.of(" ", "ключ-🔑", "a\"b\\c", "x".repeat(10_000));
    }
}
