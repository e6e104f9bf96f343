package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * The wire vectors (test resources under {@code wire-vectors/}, copied from the shared fixtures): what a
 * Python Dynamo worker puts on the wire. Every {@code valid-*.json} parses to its {@code .expect.json}, round-trips, and carries
 * {@code agent-metadata.bin}; every {@code invalid-*.json} is refused naming the field.
 */
class RdmaMetadataFixturesTest {

    private static final JsonMapper TREE = JsonMapper.builder().build();

    /** Which field each invalid vector must name (a new vector without an entry fails the test: add one). */
    private static final Map<String, String> INVALID_FIELD = Map.ofEntries(
            Map.entry("invalid-empty-metadata.json", "nixl_metadata"),
            Map.entry("invalid-extra-descriptor-field.json", "descriptors[0].dtype"),
            Map.entry("invalid-extra-field.json", "extra"),
            Map.entry("invalid-metadata-bad-base64.json", "nixl_metadata"),
            Map.entry("invalid-metadata-not-zlib.json", "nixl_metadata"),
            Map.entry("invalid-negative-size.json", "descriptors[0].size"),
            Map.entry("invalid-no-descriptors.json", "descriptors"),
            Map.entry("invalid-not-json.json", "(document)"),
            Map.entry("invalid-null-pointer.json", "descriptors[0].ptr"),
            Map.entry("invalid-operation-kind-four.json", "operation_kind"),
            Map.entry("invalid-operation-kind-zero.json", "operation_kind"),
            Map.entry("invalid-unknown-device.json", "descriptors[0].device"));

    // ---- fixture access (also used by the other wire tests) ----

    /** Where the vectors sit on the test classpath (copied from the shared fixtures; see its README). */
    static final String RESOURCE_DIR = "wire-vectors";

    /** The {@code wire-vectors} test resource directory, resolved through the class loader. */
    static Path fixtureDir() {
        URL url = RdmaMetadataFixturesTest.class.getClassLoader().getResource(RESOURCE_DIR + "/README.md");
        if (url == null) {
            throw new IllegalStateException("Wire vectors not on the test classpath: " + RESOURCE_DIR + "/README.md");
        }
        try {
            return Path.of(url.toURI()).getParent();
        } catch (URISyntaxException e) {
            throw new IllegalStateException("Wire vectors at an unreadable location: " + url, e);
        }
    }

    static List<Path> vectors(String prefix) {
        try (Stream<Path> files = Files.list(fixtureDir())) {
            return files.filter(p -> {
                String name = p.getFileName().toString();
                return name.startsWith(prefix) && name.endsWith(".json") && !name.endsWith(".expect.json");
            }).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static List<Path> validVectors() {
        return vectors("valid-");
    }

    static List<Path> invalidVectors() {
        return vectors("invalid-");
    }

    static String read(Path file) {
        try {
            return Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The document as it travels: the file without the one trailing newline the file ends with. */
    static String document(Path file) {
        String text = read(file);
        return text.endsWith("\n") ? text.substring(0, text.length() - 1) : text;
    }

    static byte[] agentMetadata() {
        try {
            return Files.readAllBytes(fixtureDir().resolve("agent-metadata.bin"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static JsonNode expectation(Path valid) {
        String name = valid.getFileName().toString();
        return TREE.readTree(read(valid.resolveSibling(name.replace(".json", ".expect.json"))));
    }

    /**
     * What {@code toJson()} must write for a valid vector: the file's bytes with each device replaced by its
     * normalised form (which is what pydantic re-serialises, as its validator returns the normalised string).
     * Identical to the file where the file's devices are already normal.
     */
    static String canonical(Path valid) {
        JsonNode expect = expectation(valid);
        ObjectNode doc = (ObjectNode) TREE.readTree(document(valid));
        for (int i = 0; i < doc.get("descriptors").size(); i++) {
            ((ObjectNode) doc.get("descriptors").get(i)).put("device", expect.get("descriptors").get(i).get(0).asString());
        }
        return TREE.writeValueAsString(doc);
    }

    // ---- the directory itself ----

    @Test
    void fixtureDirectoryResolvesAndHoldsVectors() {
        Path dir = fixtureDir();
        assertThat(dir).isDirectory();
        assertThat(validVectors()).hasSizeGreaterThanOrEqualTo(6);
        assertThat(invalidVectors()).hasSizeGreaterThanOrEqualTo(12);
        assertThat(dir.resolve("agent-metadata.bin")).isRegularFile();
        assertThat(agentMetadata()).isNotEmpty();
        for (Path valid : validVectors()) {
            String expect = valid.getFileName().toString().replace(".json", ".expect.json");
            assertThat(valid.resolveSibling(expect)).as("expectation for %s", valid).isRegularFile();
        }
    }

    @Test
    void vectorsComeFromTheTestClasspathInsideTheCheckout() {
        assertThat(System.getProperty("nixl.shared.dir")).as("no build setting points outside the checkout").isNull();
        Path classes = Path.of("target", "test-classes").toAbsolutePath().normalize();
        assertThat(fixtureDir()).startsWith(classes);
        assertThat(Path.of("src", "test", "resources", RESOURCE_DIR, "agent-metadata.bin")).isRegularFile();
    }

    @Test
    void everyInvalidVectorHasAnExpectedField() {
        List<String> names = new ArrayList<>();
        invalidVectors().forEach(p -> names.add(p.getFileName().toString()));
        assertThat(INVALID_FIELD.keySet()).containsExactlyInAnyOrderElementsOf(names);
    }

    // ---- valid vectors ----

    @ParameterizedTest(name = "{0}")
    @MethodSource("validVectors")
    void validVectorParsesToItsExpectation(Path file) {
        RdmaMetadata metadata = RdmaMetadata.fromJson(document(file));
        JsonNode expect = expectation(file);

        assertThat(metadata.operationKind().toString()).isEqualTo(expect.get("kind").asString());
        JsonNode descriptors = expect.get("descriptors");
        assertThat(metadata.descriptors()).hasSize(descriptors.size());
        for (int i = 0; i < descriptors.size(); i++) {
            SerializedDescriptor actual = metadata.descriptors().get(i);
            JsonNode triple = descriptors.get(i);
            assertThat(actual.device()).as("descriptor %d device", i).isEqualTo(triple.get(0).asString());
            assertThat(actual.ptr()).as("descriptor %d ptr", i).isEqualTo(triple.get(1).asLong());
            assertThat(actual.size()).as("descriptor %d size", i).isEqualTo(triple.get(2).asLong());
            assertThat(actual.toDevice()).isEqualTo(Device.of(triple.get(0).asString()));
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("validVectors")
    void validVectorCarriesTheAgentMetadata(Path file) {
        RdmaMetadata metadata = RdmaMetadata.fromJson(document(file));
        assertThat(metadata.decodeNixlMetadata()).isEqualTo(agentMetadata());
        assertThat(metadata.nixlMetadata()).as("nixl_metadata kept as it travelled")
                .isEqualTo(TREE.readTree(document(file)).get("nixl_metadata").asString());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("validVectors")
    void validVectorRoundTripsByteForByte(Path file) {
        String json = RdmaMetadata.fromJson(document(file)).toJson();
        assertThat(json).isEqualTo(canonical(file));
        if (canonical(file).equals(document(file))) {
            assertThat(json).isEqualTo(document(file));
        }
        // and the canonical form is a fixed point
        assertThat(RdmaMetadata.fromJson(json).toJson()).isEqualTo(json);
        assertThat(RdmaMetadata.fromJson(json)).isEqualTo(RdmaMetadata.fromJson(document(file)));
    }

    @Test
    void onlyTheNormalisationVectorDiffersFromItsRoundTrip() {
        List<String> differing = new ArrayList<>();
        for (Path file : validVectors()) {
            if (!RdmaMetadata.fromJson(document(file)).toJson().equals(document(file))) {
                differing.add(file.getFileName().toString());
            }
        }
        assertThat(differing).containsExactly("valid-device-normalised.json");
    }

    @Test
    void validVectorsEndWithExactlyOneNewline() {
        for (Path file : validVectors()) {
            String text = read(file);
            assertThat(text).as("%s", file).endsWith("}\n").doesNotEndWith("\n\n");
        }
    }

    // ---- encoding ----

    @Test
    void javaDeflaterLevel6MatchesPythonZlibLevel6() {
        List<String> b64 = new ArrayList<>();
        for (Path file : validVectors()) {
            String metadata = TREE.readTree(document(file)).get("nixl_metadata").asString();
            if (metadata.startsWith("b64:")) {
                b64.add(metadata);
            }
        }
        assertThat(b64).isNotEmpty();
        String encoded = NixlMetadataCodec.encode(agentMetadata());
        assertThat(b64).allSatisfy(m -> assertThat(encoded).isEqualTo(m));

        RdmaMetadata built = RdmaMetadata.of(List.of(new SerializedDescriptor("cpu", 140737488289792L, 4096)),
                agentMetadata(), "5f0c1f9a-2a43-4a53-9a7c-1b8d6f2e9c01", OperationKind.READ);
        assertThat(built.nixlMetadata()).isEqualTo(b64.get(0));
        assertThat(built.toJson()).isEqualTo(document(fixtureDir().resolve("valid-read-single-cpu.json")));
    }

    @Test
    void legacyHexIsTheSameZlibStream() {
        String hex = TREE.readTree(document(fixtureDir().resolve("valid-legacy-hex-metadata.json")))
                .get("nixl_metadata").asString();
        byte[] zlib = Base64.getDecoder().decode(NixlMetadataCodec.encode(agentMetadata()).substring(4));
        assertThat(hex).isEqualTo(HexFormat.of().formatHex(zlib));
    }

    // ---- invalid vectors ----

    @ParameterizedTest(name = "{0}")
    @MethodSource("invalidVectors")
    void invalidVectorIsRefusedNamingTheField(Path file) {
        String name = file.getFileName().toString();
        String field = INVALID_FIELD.get(name);
        assertThat(field).as("expected field for %s (add it to INVALID_FIELD)", name).isNotNull();

        InvalidMetadataException e = catchThrowableOfType(InvalidMetadataException.class,
                () -> RdmaMetadata.fromJson(document(file)));
        assertThat(e).as("%s must be refused", name).isNotNull();
        assertThat(e.field()).isEqualTo(field);
        assertThat(e.getMessage()).contains("'" + field + "'");
        // also refused with the trailing newline the file has
        assertThatThrownBy(() -> RdmaMetadata.fromJson(read(file))).isInstanceOf(InvalidMetadataException.class);
    }
}
