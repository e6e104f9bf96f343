package io.nixlconnect.dynamo;

import static org.assertj.core.api.Assertions.assertThat;

import io.nixlconnect.dynamo.internal.codec.MsgpackValues;
import io.nixlconnect.dynamo.internal.discovery.InstanceRecord;
import io.nixlconnect.dynamo.internal.wire.ControlMessages;
import io.nixlconnect.dynamo.internal.wire.FrameInput;
import io.nixlconnect.dynamo.internal.wire.RequestFrame;
import io.nixlconnect.dynamo.internal.wire.TwoPart;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Bytes the real Dynamo 1.6.1 wheel sent (src/test/resources/wire/dynamo-1.6.1/README.md), read by this module's
 * parsers and, where the content is the same, written by its encoders byte for byte.
 */
class DynamoWireFormatTest {

    private static byte[] fixture(String name) throws IOException {
        try (InputStream in = DynamoWireFormatTest.class.getResourceAsStream("/wire/dynamo-1.6.1/" + name)) {
            assertThat(in).as(name).isNotNull();
            return in.readAllBytes();
        }
    }

    private static List<TwoPart> frames(byte[] stream) throws IOException {
        FrameInput in = new FrameInput(new ByteArrayInputStream(stream), 10_000);
        List<TwoPart> frames = new ArrayList<>();
        for (int first; (first = in.beginFrame(0)) >= 0; ) {
            frames.add(TwoPart.read(in, first, 1 << 20));
        }
        return frames;
    }

    private static String text(byte[] bytes) {
        return new String(bytes, StandardCharsets.UTF_8);
    }

    @Test
    void aPythonClientsRequestFrameReadsAndItsPayloadIsWhatThisModuleWrites() throws IOException {
        byte[] bytes = fixture("python-client-request-msgpack.bin");
        FrameInput in = new FrameInput(new ByteArrayInputStream(bytes), 10_000);
        RequestFrame frame = RequestFrame.read(in, in.beginFrame(0), 1 << 20);
        assertThat(in.beginFrame(0)).as("one frame, nothing after it").isEqualTo(-1);
        assertThat(frame.path()).isEqualTo("bf05050a3e855ad9/demo/backend/generate");
        assertThat(frame.headers()).containsEntry("x-endpoint-path", frame.path()).containsKey("request-id");

        TwoPart payload = TwoPart.parse(frame.payload(), ControlMessages.MAX_CONTROL_HEADER);
        ControlMessages.RequestControl control = ControlMessages.parseRequestHeader(payload.header());
        assertThat(control.id()).isEqualTo(frame.headers().get("request-id")).isEqualTo(control.context());
        assertThat(control.codec()).isEqualTo(PayloadCodec.MSGPACK);
        assertThat(control.host()).isEqualTo("127.0.0.1");
        assertThat(control.port()).isEqualTo(44197);
        Map<String, Object> expected = new LinkedHashMap<>();
        expected.put("a", "x");
        expected.put("n", Arrays.asList(1L, 2.5, null, true));
        assertThat(MsgpackValues.parse(payload.body())).isEqualTo(expected);

        // The same request written here: the control header and body are Dynamo's, byte for byte.
        byte[] header = ControlMessages.requestHeader(control.id(), PayloadCodec.MSGPACK, "127.0.0.1:44197",
                control.subject());
        assertThat(text(header)).isEqualTo(text(payload.header()));
        assertThat(MsgpackValues.write(expected)).isEqualTo(payload.body());
        assertThat(new TwoPart(header, payload.body()).encode()).isEqualTo(frame.payload());
        byte[] encoded = RequestFrame.encode(frame.path(), frame.headers(), frame.payload());
        assertThat(encoded).hasSize(bytes.length);
    }

    @Test
    void aPythonWorkersJsonStreamReadsFrameByFrameAndTheseEncodersWriteTheSameFrames() throws IOException {
        List<TwoPart> frames = frames(fixture("python-worker-stream-json.bin"));
        assertThat(frames).hasSize(7);
        String subject = ControlMessages.parseHandshake(frames.get(0).header());
        assertThat(ControlMessages.handshake(subject)).isEqualTo(frames.get(0).header());
        assertThat(ControlMessages.parsePrologue(frames.get(1).header())).isNull();
        assertThat(ControlMessages.prologue(null)).isEqualTo(frames.get(1).header());
        for (int i = 0; i < 3; i++) {
            TwoPart frame = frames.get(2 + i);
            assertThat(frame.header()).isEmpty();
            ControlMessages.StreamItem item = ControlMessages.parseStreamBody(PayloadCodec.JSON, frame.body());
            Map<String, Object> data = new LinkedHashMap<>();
            data.put("i", (long) i);
            data.put("echo", Map.of("x", 1L));
            assertThat(item).isEqualTo(new ControlMessages.Data(DynamoResponse.of(data)));
            assertThat(text(ControlMessages.dataFrame(PayloadCodec.JSON, data))).isEqualTo(text(frame.body()));
        }
        assertThat(ControlMessages.parseStreamBody(PayloadCodec.JSON, frames.get(5).body()))
                .isInstanceOf(ControlMessages.Complete.class);
        assertThat(ControlMessages.completeFinal(PayloadCodec.JSON)).isEqualTo(frames.get(5).body());
        assertThat(ControlMessages.parseControl(frames.get(6).header())).isEqualTo(ControlMessages.Control.SENTINEL);
        assertThat(ControlMessages.Control.SENTINEL.header()).isEqualTo(frames.get(6).header());
    }

    @Test
    void aPythonWorkersMsgpackStreamCarriesBytesAsBinaryAndTheseEncodersWriteTheSameFrames() throws IOException {
        List<TwoPart> frames = frames(fixture("python-worker-stream-msgpack.bin"));
        assertThat(frames).hasSize(7);
        for (int i = 0; i < 3; i++) {
            byte[] body = frames.get(2 + i).body();
            ControlMessages.Data item = (ControlMessages.Data) ControlMessages.parseStreamBody(PayloadCodec.MSGPACK, body);
            Map<?, ?> data = (Map<?, ?>) item.response().data();
            assertThat(data.get("i")).isEqualTo((long) i);
            assertThat(data.get("echo")).isEqualTo(Map.of("bytes", 1L, "x", 1L));
            assertThat((byte[]) data.get("b")).containsExactly(1, 2);
            Map<String, Object> same = new LinkedHashMap<>();
            same.put("i", (long) i);
            Map<String, Object> echo = new LinkedHashMap<>();
            echo.put("bytes", 1L);
            echo.put("x", 1L);
            same.put("echo", echo);
            same.put("b", new byte[] {1, 2});
            assertThat(ControlMessages.dataFrame(PayloadCodec.MSGPACK, same)).isEqualTo(body);
        }
        assertThat(ControlMessages.completeFinal(PayloadCodec.MSGPACK)).isEqualTo(frames.get(5).body());
    }

    @Test
    void aPythonHandlersErrorArrivesAsAnErrorEventWithItsMessageAndClass() throws IOException {
        List<TwoPart> frames = frames(fixture("python-worker-stream-error.bin"));
        assertThat(frames).hasSize(5);
        ControlMessages.StreamItem item = ControlMessages.parseStreamBody(PayloadCodec.JSON, frames.get(2).body());
        assertThat(item).isEqualTo(new ControlMessages.ErrorEvent("ValueError: boom from worker", "InvalidRequest"));
        assertThat(ControlMessages.parseStreamBody(PayloadCodec.JSON, frames.get(3).body()))
                .isInstanceOf(ControlMessages.Complete.class);
    }

    @Test
    void aPythonWorkersDiscoveryRecordReadsAndThisModuleWritesItByteForByte() throws IOException {
        byte[] record = fixture("python-worker-record.json");
        DynamoInstance instance = InstanceRecord.parse(record);
        assertThat(instance.endpoint()).isEqualTo(EndpointId.parse("demo.backend.generate"));
        assertThat(instance.instanceIdHex()).isEqualTo("8f2760396c3268b0");
        assertThat(instance.instanceIdDecimal()).isEqualTo("10315319271260055728");
        assertThat(instance.port()).isEqualTo(44951);
        assertThat(instance.host()).isEqualTo("127.0.0.1");
        assertThat(instance.subject()).isEqualTo("8f2760396c3268b0/demo/backend/generate");
        assertThat(instance.codec()).isEqualTo(PayloadCodec.MSGPACK);
        assertThat(instance.deviceType()).isEqualTo("cpu");
        assertThat(text(InstanceRecord.write(instance))).isEqualTo(text(record).strip());
        assertThat(InstanceRecord.key(instance.endpoint(), instance.instanceId()))
                .isEqualTo("v1/instances/demo/backend/generate/8f2760396c3268b0");
    }
}
