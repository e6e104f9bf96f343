package io.nixlconnect.dynamo.internal.wire;

import static org.assertj.core.api.Assertions.assertThat;

import io.nixlconnect.dynamo.PayloadCodec;
import io.nixlconnect.dynamo.internal.RandomIds;
import io.nixlconnect.dynamo.internal.codec.JsonValues;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * The per-call control documents written and read without Jackson: byte for byte what the generator writes, and the
 * same values the parser reads, for ids as they are and for strings that need escaping (which take the generic way).
 */
class ControlMessagesFastPathTest {

    private static final String[] AWKWARD = {"h\u00e9llo", "quote\"d", "back\\slash", "tab\tnew\nline", "\u0001ctl",
        "del\u007f", "\ud83d\ude00", "", "/slash/", "x-endpoint-path"};

    private static String randomText(Random random) {
        StringBuilder text = new StringBuilder();
        int length = random.nextInt(12);
        for (int i = 0; i < length; i++) {
            text.append(switch (random.nextInt(6)) {
                case 0 -> (char) random.nextInt(0x20);
                case 1 -> '"';
                case 2 -> '\\';
                case 3 -> (char) (0x80 + random.nextInt(0x700));
                default -> (char) (0x20 + random.nextInt(0x5f));
            });
        }
        return text.toString();
    }

    @Test
    void theRequestHeaderIsWhatTheGeneratorWrites() {
        Random random = new Random(33);
        for (PayloadCodec codec : PayloadCodec.values()) {
            for (int i = 0; i < 200; i++) {
                String id = RandomIds.uuid();
                String subject = RandomIds.uuid();
                String address = i % 2 == 0 ? "127.0.0.1:" + random.nextInt(65536) : "[::1]:" + random.nextInt(65536);
                assertThat(ControlMessages.requestHeader(id, codec, address, subject))
                        .isEqualTo(ControlMessages.requestHeaderThroughGenerator(id, codec, address, subject));
            }
            for (String awkward : AWKWARD) {
                assertThat(ControlMessages.requestHeader(awkward, codec, "h:1", awkward + "s"))
                        .isEqualTo(ControlMessages.requestHeaderThroughGenerator(awkward, codec, "h:1", awkward + "s"));
            }
        }
        // and a worker reads back what was written
        ControlMessages.RequestControl control = ControlMessages.parseRequestHeader(
                ControlMessages.requestHeader("id-1", PayloadCodec.MSGPACK, "10.0.0.1:4242", "subject-1"));
        assertThat(control).isEqualTo(new ControlMessages.RequestControl("id-1", PayloadCodec.MSGPACK, "10.0.0.1", 4242,
                "subject-1", "id-1"));
    }

    @Test
    void flatObjectsAreWhatTheGeneratorWrites() {
        Random random = new Random(7);
        for (int i = 0; i < 2000; i++) {
            String[] strings = {i % 3 == 0 ? randomText(random) : "request-id", i % 5 == 0 ? randomText(random)
                    : RandomIds.uuid(), "x-endpoint-path", i % 2 == 0 ? randomText(random) : "1a/ns/comp/ep"};
            Map<String, Object> map = new LinkedHashMap<>();
            map.put(strings[0], strings[1]);
            map.put(strings[2], strings[3]);
            assertThat(JsonValues.writePlainObject(strings)).as("%s", map).isEqualTo(JsonValues.write(map));
        }
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put("request-id", "r");
        headers.put("x-endpoint-path", "p");
        byte[] frame = RequestFrame.encode("p", headers, new byte[0]);
        assertThat(new String(frame, StandardCharsets.UTF_8)).contains("{\"request-id\":\"r\",\"x-endpoint-path\":\"p\"}");
    }

    @Test
    void handshakesProloguesAndControlsReadAsTheParserReadsThem() {
        String subject = UUID.randomUUID().toString();
        assertThat(ControlMessages.parseHandshake(ControlMessages.handshake(subject))).isEqualTo(subject);
        for (String awkward : AWKWARD) {
            byte[] written = ControlMessages.handshake(awkward);
            assertThat(ControlMessages.parseHandshake(written)).as(awkward).isEqualTo(awkward);
        }
        // other spellings of the same document take the parser's way
        assertThat(ControlMessages.parseHandshake(("{\"stream_type\":\"response\",\"subject\":\"" + subject + "\"}")
                .getBytes(StandardCharsets.UTF_8))).isEqualTo(subject);
        assertThat(ControlMessages.parseHandshake(("{ \"subject\" : \"a\\u0041\",\"stream_type\":\"response\"}")
                .getBytes(StandardCharsets.UTF_8))).isEqualTo("aA");
        assertThat(ControlMessages.parsePrologue(ControlMessages.prologue(null))).isNull();
        assertThat(ControlMessages.parsePrologue("{ \"error\" : null }".getBytes(StandardCharsets.UTF_8))).isNull();
        assertThat(ControlMessages.parsePrologue(ControlMessages.prologue("engine not ready"))).contains("engine not ready");
        for (ControlMessages.Control control : ControlMessages.Control.values()) {
            assertThat(ControlMessages.parseControl(control.header())).isEqualTo(control);
        }
        assertThat(ControlMessages.parseControl(" \"stop\" ".getBytes(StandardCharsets.UTF_8)))
                .isEqualTo(ControlMessages.Control.STOP);
        assertThat(ControlMessages.parseControl("\"stopp\"".getBytes(StandardCharsets.UTF_8))).isNull();
    }

    @Test
    void randomIdsAreVersionFourUuids() {
        java.util.Set<String> seen = new java.util.HashSet<>();
        for (int i = 0; i < 5000; i++) {
            String id = RandomIds.uuid();
            UUID uuid = UUID.fromString(id);
            assertThat(uuid.version()).isEqualTo(4);
            assertThat(uuid.variant()).isEqualTo(2);
            assertThat(uuid.toString()).isEqualTo(id);
            seen.add(id);
        }
        assertThat(seen).hasSize(5000);
    }
}
