package io.nixlconnect;

import io.nixlconnect.transport.embedded.EmbeddedSettings;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.zip.Deflater;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Limits on what parsing a peer's metadata may cost: integer texts over 20 characters are refused before
 * conversion, agent metadata is decoded under the connector's {@code maxMetadataSize} and never kept, and the
 * descriptor count is capped ({@code maxDescriptors}).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class MetadataParsingLimitsTest {

    private static final String AGENT = NixlMetadataCodec.encode("NIXLAGENT".getBytes());

    private static String document(String ptr) {
        return "{\"descriptors\":[{\"device\":\"cpu\",\"ptr\":" + ptr + ",\"size\":16}],\"nixl_metadata\":\"" + AGENT
                + "\",\"notification_key\":\"0123456789abcdef0123456789abcdef\",\"operation_kind\":1}";
    }

    @Test
    void aMillionDigitIntegerTextIsRefusedBeforeConversion() {
        // BigInteger parsing is quadratic: this took 26 s of CPU before it was refused by length.
        String digits = "9".repeat(1_000_000);
        InvalidMetadataException e = catchThrowableOfType(InvalidMetadataException.class,
                () -> RdmaMetadata.fromJson(document("\"" + digits + "\"")));
        assertThat(e).isNotNull();
        assertThat(e.field()).isEqualTo("descriptors[0].ptr");
        assertThat(e.getMessage()).contains("1000000 characters").hasSizeLessThan(400);
        // A JSON number that long is refused by the parser's own limit.
        assertThat(catchThrowableOfType(InvalidMetadataException.class, () -> RdmaMetadata.fromJson(document(digits))))
                .isNotNull();
    }

    @Test
    void integerTextsUpTo20CharactersStillParse() {
        assertThat(RdmaMetadata.fromJson(document("\" 9223372036854775807 \"")).descriptors().get(0).ptr())
                .isEqualTo(Long.MAX_VALUE);
        assertThat(RdmaMetadata.fromJson(document("\"+0000000000000004096\"")).descriptors().get(0).ptr()).isEqualTo(4096);
        assertThat(catchThrowableOfType(InvalidMetadataException.class,
                () -> RdmaMetadata.fromJson(document("\"000000000000000004096\""))).field()).isEqualTo("descriptors[0].ptr");
    }

    @Test
    void parsedMetadataKeepsNoDecodedBytes() {
        for (Field field : RdmaMetadata.class.getDeclaredFields()) {
            if (!Modifier.isStatic(field.getModifiers())) {
                assertThat(field.getType()).as(field.getName()).isNotEqualTo(byte[].class);
            }
        }
    }

    @Test
    void agentMetadataInflatingBeyondMaxMetadataSizeIsRefusedBeforeAnythingIsRegistered() {
        // 2 MiB of zeros deflates to about 2 KiB; this connector accepts 1 MiB.
        String bomb = "b64:" + java.util.Base64.getEncoder().encodeToString(deflate(new byte[2 << 20]));
        assertThat(bomb.length()).isLessThan(8192);
        RdmaMetadata metadata = new RdmaMetadata(List.of(new SerializedDescriptor("cpu", 4096, 16)), bomb,
                "0123456789abcdef0123456789abcdef", OperationKind.READ);
        try (Connector connector = new Connector(ConnectorOptions.builder().transports(EmbeddedSettings.defaults())
                .maxMetadataSize(1 << 20).build()); Descriptor target = Descriptor.allocate(16)) {
            InvalidMetadataException e = catchThrowableOfType(InvalidMetadataException.class,
                    () -> connector.beginRead(metadata, target));
            assertThat(e).isNotNull();
            assertThat(e.field()).isEqualTo("nixl_metadata");
            assertThat(e.getMessage()).contains(String.valueOf(1 << 20));
            assertThat(connector.registeredBytes()).isZero();
            assertThat(connector.inFlightOperations()).isZero();
        }
    }

    @Test
    void descriptorListsLongerThanMaxDescriptorsAreRefused() {
        List<SerializedDescriptor> remote = new ArrayList<>();
        List<Descriptor> local = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            remote.add(new SerializedDescriptor("cpu", 4096L * (i + 1), 16));
            local.add(Descriptor.allocate(16));
        }
        RdmaMetadata metadata = new RdmaMetadata(remote, AGENT, "0123456789abcdef0123456789abcdef", OperationKind.READ);
        try (Connector connector = new Connector(ConnectorOptions.builder().transports(EmbeddedSettings.defaults())
                .maxDescriptors(4).build())) {
            InvalidMetadataException e = catchThrowableOfType(InvalidMetadataException.class,
                    () -> connector.beginRead(metadata, local));
            assertThat(e).isNotNull();
            assertThat(e.field()).isEqualTo("descriptors");
            assertThat(e.getMessage()).contains("maxDescriptors");
            assertThat(connector.registeredBytes()).isZero();
        } finally {
            local.forEach(Descriptor::close);
        }
        assertThat(ConnectorOptions.builder().build().maxDescriptors()).isEqualTo(ConnectorOptions.DEFAULT_MAX_DESCRIPTORS);
    }

    private static byte[] deflate(byte[] data) {
        Deflater deflater = new Deflater(9);
        deflater.setInput(data);
        deflater.finish();
        byte[] buffer = new byte[data.length / 100 + 1024];
        int n = deflater.deflate(buffer);
        deflater.end();
        return java.util.Arrays.copyOf(buffer, n);
    }
}
