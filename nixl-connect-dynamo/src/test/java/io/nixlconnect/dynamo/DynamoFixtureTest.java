package io.nixlconnect.dynamo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.dynamo.internal.codec.JsonValues;
import io.nixlconnect.dynamo.internal.codec.Payloads;
import io.nixlconnect.dynamo.internal.discovery.EtcdGateway;
import io.nixlconnect.dynamo.internal.discovery.InstanceRecord;
import io.nixlconnect.dynamo.internal.wire.Ack;
import io.nixlconnect.dynamo.internal.wire.ControlMessages;
import io.nixlconnect.dynamo.internal.wire.FrameInput;
import io.nixlconnect.dynamo.internal.wire.FrameTooLargeException;
import io.nixlconnect.dynamo.internal.wire.RequestFrame;
import io.nixlconnect.dynamo.internal.wire.TwoPart;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The wire fixtures of {@code interop/fixtures/dynamo-1.6.1/} (a packet capture of the real 1.6.1 runtime's Python
 * client and worker, every scenario of its README): every frame reads with this module's parsers and means what the
 * scenario says; what this module writes in the same place is the same bytes.
 */
class DynamoFixtureTest {

    private static final int DYNAMO_LIMIT = 32 * 1024 * 1024;

    private static Path fixtures() {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path candidate = dir.resolve("interop").resolve("fixtures").resolve("dynamo-1.6.1");
            if (Files.isDirectory(candidate)) {
                return candidate;
            }
        }
        throw new IllegalStateException("interop/fixtures/dynamo-1.6.1 not found above " + Path.of("").toAbsolutePath());
    }

    private static Path file(String name) {
        return fixtures().resolve("request-plane").resolve(name);
    }

    private static byte[] bytes(String name) throws IOException {
        return Files.readAllBytes(file(name));
    }

    private static FrameInput input(byte[] bytes) {
        return new FrameInput(new ByteArrayInputStream(bytes), 10_000);
    }

    private static List<RequestFrame> requests(String scenario) throws IOException {
        FrameInput in = input(bytes(scenario + ".request-plane.bin"));
        List<RequestFrame> frames = new ArrayList<>();
        for (int first; (first = in.beginFrame(0)) >= 0; ) {
            frames.add(RequestFrame.read(in, first, DYNAMO_LIMIT));
        }
        return frames;
    }

    private static List<String> acks(String scenario) throws IOException {
        FrameInput in = input(bytes(scenario + ".acks.bin"));
        List<String> acks = new ArrayList<>();
        for (int first; (first = in.beginFrame(0)) >= 0; ) {
            acks.add(Ack.read(in, first));
        }
        return acks;
    }

    private static List<TwoPart> frames(String name) throws IOException {
        FrameInput in = input(bytes(name));
        List<TwoPart> frames = new ArrayList<>();
        for (int first; (first = in.beginFrame(0)) >= 0; ) {
            frames.add(TwoPart.read(in, first, DYNAMO_LIMIT));
        }
        return frames;
    }

    /** One response stream, read as a caller reads it. */
    private record Stream1(String subject, String prologueError, List<ControlMessages.StreamItem> items, boolean sentinel) {
    }

    private static Stream1 stream(String name, PayloadCodec codec) throws IOException {
        List<TwoPart> frames = frames(name);
        String subject = ControlMessages.parseHandshake(frames.get(0).header());
        String error = ControlMessages.parsePrologue(frames.get(1).header());
        List<ControlMessages.StreamItem> items = new ArrayList<>();
        boolean sentinel = false;
        for (TwoPart frame : frames.subList(2, frames.size())) {
            if (frame.header().length > 0) {
                assertThat(ControlMessages.parseControl(frame.header())).isEqualTo(ControlMessages.Control.SENTINEL);
                sentinel = true;
            } else {
                items.add(ControlMessages.parseStreamBody(codec, frame.body()));
            }
        }
        return new Stream1(subject, error, items, sentinel);
    }

    private static PayloadCodec codecOf(String scenario) {
        return scenario.endsWith("json") ? PayloadCodec.JSON : PayloadCodec.MSGPACK;
    }

    @Test
    void everyCallersRequestReadsAndThisModuleWritesTheSameControlHeader() throws IOException {
        List<String> scenarios = List.of("echo-msgpack", "echo-json", "empty-msgpack", "empty-json", "stream-msgpack",
                "stream-json", "error-msgpack", "error-json", "error-first", "prologue-error", "cancel-stop",
                "cancel-kill", "die-midstream", "encode-msgpack", "encode-json", "kv-1024-blocks", "overload");
        for (String scenario : scenarios) {
            List<RequestFrame> frames = requests(scenario);
            assertThat(frames).as(scenario).isNotEmpty();
            for (RequestFrame frame : frames) {
                assertThat(frame.headers()).as(scenario).containsEntry("x-endpoint-path", frame.path())
                        .containsKeys("request-id", "x-frontend-send-ts-ns");
                TwoPart payload = TwoPart.parse(frame.payload(), ControlMessages.MAX_CONTROL_HEADER);
                ControlMessages.RequestControl control = ControlMessages.parseRequestHeader(payload.header());
                assertThat(control.id()).as(scenario).isEqualTo(frame.headers().get("request-id"));
                PayloadCodec codec = scenario.endsWith("json") ? PayloadCodec.JSON : PayloadCodec.MSGPACK;
                assertThat(control.codec()).as(scenario).isEqualTo(codec);
                Object request = Payloads.decode(codec, payload.body(), 0, payload.body().length);
                assertThat(request).as(scenario).isInstanceOf(Map.class);
                assertThat(Payloads.encode(codec, request)).as(scenario + ": the body as written here")
                        .isEqualTo(payload.body());
                byte[] header = ControlMessages.requestHeader(control.id(), codec, control.host() + ":" + control.port(),
                        control.subject());
                assertThat(new String(header, StandardCharsets.UTF_8)).as(scenario)
                        .isEqualTo(new String(payload.header(), StandardCharsets.UTF_8));
            }
        }
    }

    @Test
    void acknowledgementsReadAsDynamoWroteThem() throws IOException {
        assertThat(acks("echo-msgpack")).containsExactly("", "");
        assertThat(acks("overload")).containsExactly("", "", Ack.OVERLOADED, Ack.OVERLOADED);
        String path = requests("handmade-unknown-path").get(0).path();
        assertThat(acks("handmade-unknown-path")).containsExactly("Server unavailable: unknown endpoint " + path);
        assertThat(acks("handmade-empty-path")).containsExactly("Server unavailable: unknown endpoint ");
        // Undecodable bodies and a control header without connection_info: accepted, never answered (Dynamo); here
        // the same frames are refused by this module's parsers, so a Java worker says so instead of keeping silent.
        assertThat(acks("handmade-bad-msgpack-body")).containsExactly("");
        assertThat(acks("handmade-bad-control")).containsExactly("");
        RequestFrame control = requests("handmade-bad-control").get(0);
        assertThatThrownBy(() -> ControlMessages.parseRequestHeader(TwoPart.parse(control.payload(),
                ControlMessages.MAX_CONTROL_HEADER).header())).isInstanceOf(DynamoProtocolException.class)
                .hasMessageContaining("connection_info");
        for (String scenario : List.of("handmade-bad-msgpack-body", "handmade-bad-json-body")) {
            TwoPart payload = TwoPart.parse(requests(scenario).get(0).payload(), ControlMessages.MAX_CONTROL_HEADER);
            PayloadCodec codec = ControlMessages.parseRequestHeader(payload.header()).codec();
            assertThatThrownBy(() -> Payloads.decode(codec, payload.body(), 0, payload.body().length)).as(scenario)
                    .isInstanceOf(DynamoProtocolException.class);
        }
    }

    @Test
    void anOversizedFrameIsRefusedWithDynamosOwnWords() throws IOException {
        FrameInput in = input(bytes("handmade-oversize-frame.request-plane.bin"));
        FrameTooLargeException tooLarge = org.assertj.core.api.Assertions.catchThrowableOfType(FrameTooLargeException.class,
                () -> RequestFrame.read(in, in.beginFrame(0), DYNAMO_LIMIT));
        assertThat(tooLarge).isNotNull();
        assertThat(List.of(Ack.tooLarge(tooLarge))).isEqualTo(acks("handmade-oversize-frame"));
    }

    @Test
    void streamsMeanWhatTheirScenarioSays() throws IOException {
        for (String scenario : List.of("echo-msgpack", "echo-json")) {
            for (int n = 1; n <= 2; n++) {
                Stream1 stream = stream(scenario + ".response-" + n + ".bin", codecOf(scenario));
                assertThat(stream.prologueError()).isNull();
                assertThat(stream.items()).as(scenario).containsExactly(
                        new ControlMessages.Data(DynamoResponse.of(Map.of("request", (long) n - 1))),
                        new ControlMessages.Complete());
                assertThat(stream.sentinel()).isTrue();
            }
        }
        for (String scenario : List.of("empty-msgpack", "empty-json")) {
            assertThat(stream(scenario + ".response-1.bin", codecOf(scenario)).items()).containsExactly(
                    new ControlMessages.Data(DynamoResponse.of(Map.of())), new ControlMessages.Complete());
        }
        for (String scenario : List.of("stream-msgpack", "stream-json")) {
            Stream1 stream = stream(scenario + ".response-1.bin", codecOf(scenario));
            assertThat(stream.items()).hasSize(4).last().isEqualTo(new ControlMessages.Complete());
            assertThat(stream.items().get(2)).isEqualTo(new ControlMessages.Data(DynamoResponse.of(
                    Map.of("index", 2L, "count", 3L))));
        }
    }

    @Test
    void errorsArriveAsEventsOrPrologueAndThisModuleWritesTheSameEvent() throws IOException {
        String message = "RuntimeError: dynamo_worker: error after 1 responses";
        for (String scenario : List.of("error-msgpack", "error-json")) {
            PayloadCodec codec = codecOf(scenario);
            List<TwoPart> frames = frames(scenario + ".response-1.bin");
            Stream1 stream = stream(scenario + ".response-1.bin", codec);
            assertThat(stream.prologueError()).isNull();
            assertThat(stream.items().get(1)).isEqualTo(new ControlMessages.ErrorEvent(message, "Internal"));
            assertThat(ControlMessages.errorFrame(codec, message)).as(scenario).isEqualTo(frames.get(3).body());
        }
        assertThat(stream("error-first.response-1.bin", PayloadCodec.MSGPACK).items().get(0))
                .isInstanceOf(ControlMessages.ErrorEvent.class);
        Stream1 refused = stream("prologue-error.response-1.bin", PayloadCodec.MSGPACK);
        assertThat(refused.prologueError()).startsWith("Generate Error: RuntimeError: dynamo_worker: refused");
        List<TwoPart> frames = frames("prologue-error.response-1.bin");
        Map<?, ?> captured = (Map<?, ?>) JsonValues.parse(frames.get(1).header(), 1 << 20);
        Map<?, ?> written = (Map<?, ?>) JsonValues.parse(ControlMessages.prologue(refused.prologueError()), 1 << 20);
        assertThat(written.keySet()).isEqualTo(captured.keySet());
        assertThat(((Map<?, ?>) written.get("typed_error")).keySet()).isEqualTo(((Map<?, ?>) captured.get("typed_error"))
                .keySet());
    }

    @Test
    void cancellationAndDeathEndStreamsWithoutCompleteFinal() throws IOException {
        for (String scenario : List.of("cancel-stop", "cancel-kill")) {
            Stream1 stream = stream(scenario + ".response-1.bin", PayloadCodec.MSGPACK);
            assertThat(stream.items()).as(scenario).isNotEmpty().allMatch(ControlMessages.Data.class::isInstance);
            assertThat(stream.sentinel()).isFalse();
            List<TwoPart> control = frames(scenario + ".response-1.control.bin");
            assertThat(control).isNotEmpty();
            ControlMessages.Control expected = scenario.equals("cancel-stop") ? ControlMessages.Control.STOP
                    : ControlMessages.Control.KILL;
            assertThat(ControlMessages.parseControl(control.get(0).header())).isEqualTo(expected);
            assertThat(TwoPart.headerOnly(expected.header()).encode()).as("written here").isEqualTo(
                    java.util.Arrays.copyOf(bytes(scenario + ".response-1.control.bin"), 24 + expected.header().length));
        }
        Stream1 died = stream("die-midstream.response-1.bin", PayloadCodec.MSGPACK);
        assertThat(died.items()).hasSize(2).allMatch(ControlMessages.Data.class::isInstance);
        assertThat(died.sentinel()).isFalse();
    }

    @Test
    void theEncodeReplyAndTheKvBlockListCarryRdmaMetadataThisModuleReads() throws IOException {
        for (String scenario : List.of("encode-msgpack", "encode-json")) {
            Stream1 stream = stream(scenario + ".response-1.bin", codecOf(scenario));
            EncodeReply reply = EncodeReply.fromValue(((ControlMessages.Data) stream.items().get(0)).response().data());
            assertThat(reply.embeddingsShape()).containsExactly(1048576L);
            assertThat(reply.embeddingsDtype()).isEqualTo("torch.uint8");
            assertThat(reply.nixlReadableMetadata().descriptors()).hasSize(1);
            assertThat(reply.nixlReadableMetadata().totalSize()).isEqualTo(1048576L);
            // written back: the same reply (the metadata as model_dump(), keys in the worker's order)
            Map<?, ?> sent = (Map<?, ?>) ((ControlMessages.Data) stream.items().get(0)).response().data();
            assertThat(reply.toValue()).isEqualTo(sent);
        }
        Stream1 kv = stream("kv-1024-blocks.response-1.bin", PayloadCodec.MSGPACK);
        Map<?, ?> reply = (Map<?, ?>) ((ControlMessages.Data) kv.items().get(0)).response().data();
        RdmaMetadata metadata = DynamoValues.toRdmaMetadata(reply.get("nixl_readable_metadata"));
        assertThat(metadata.descriptors()).hasSize(1024);
        assertThat((List<?>) reply.get("block_ids")).hasSize(1024);
        List<TwoPart> frames = frames("kv-1024-blocks.response-1.bin");
        assertThat(ControlMessages.dataFrame(PayloadCodec.MSGPACK, reply)).as("the 1,024-block reply written here")
                .isEqualTo(frames.get(2).body());
    }

    @Test
    void discoveryEntriesReadAndAreWrittenByteForByte() throws IOException {
        Path instances = fixtures().resolve("discovery").resolve("file").resolve("v1").resolve("instances");
        try (Stream<Path> files = Files.list(instances)) {
            for (Path file : files.toList()) {
                byte[] record = Files.readAllBytes(file);
                DynamoInstance instance = InstanceRecord.parse(record);
                assertThat(file.getFileName().toString()).isEqualTo(InstanceRecord.key(instance.endpoint(),
                        instance.instanceId()).substring(InstanceRecord.PREFIX.length()).replace("/", "%2F"));
                assertThat(instance.codec()).isEqualTo(PayloadCodec.JSON);
                assertThat(new String(InstanceRecord.write(instance), StandardCharsets.UTF_8))
                        .isEqualTo(new String(record, StandardCharsets.UTF_8));
            }
        }
        Map<?, ?> gateway = (Map<?, ?>) JsonValues.parse(Files.readAllBytes(fixtures().resolve("discovery")
                .resolve("etcd-gateway-range.json")), 1 << 20);
        EtcdGateway.Range range = EtcdGateway.parseRange((Map<?, ?>) gateway.get("response"));
        assertThat(range.kvs()).hasSize(1);
        EtcdGateway.KeyValue kv = range.kvs().get(0);
        DynamoInstance instance = InstanceRecord.parse(kv.value());
        assertThat(kv.lease()).as("the instance id is the lease").isEqualTo(instance.instanceId());
        assertThat(kv.key()).isEqualTo(InstanceRecord.key(instance.endpoint(), instance.instanceId()));
        assertThat(range.revision()).isPositive();
    }
}
