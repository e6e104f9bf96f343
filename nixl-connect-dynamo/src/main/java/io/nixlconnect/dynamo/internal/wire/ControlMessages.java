package io.nixlconnect.dynamo.internal.wire;

import io.nixlconnect.dynamo.DynamoProtocolException;
import io.nixlconnect.dynamo.DynamoResponse;
import io.nixlconnect.dynamo.DynamoRuntime;
import io.nixlconnect.dynamo.PayloadCodec;
import io.nixlconnect.dynamo.internal.codec.JsonValues;
import io.nixlconnect.dynamo.internal.codec.Payloads;
import io.nixlconnect.dynamo.internal.codec.Values;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The control documents of Dynamo 1.6's TCP request plane: the request's control header
 * ({@code RequestControlMessage}), the response stream's handshake, prologue, data envelopes, {@code complete_final},
 * and the {@code "stop"}, {@code "kill"} and {@code "sentinel"} control frames.
 */
public final class ControlMessages {

    /** Largest control header read (Dynamo's limit). */
    public static final int MAX_CONTROL_HEADER = 128 * 1024;

    private static final String VERSION = "Dynamo " + DynamoRuntime.SUPPORTED_VERSION;

    private ControlMessages() {
    }

    /** Where and how a request's responses go: its control header, as a worker reads it. */
    public record RequestControl(String id, PayloadCodec codec, String host, int port, String subject, String context) {
    }

    /**
     * The control header a caller sends, byte for byte as Dynamo 1.6's client writes it. Once per call: written without
     * a JSON generator when its strings need no escaping (ids, an address), as they always do.
     */
    public static byte[] requestHeader(String requestId, PayloadCodec codec, String address, String subject) {
        String codecName = codec.wireName();
        if (JsonValues.plain(requestId) && JsonValues.plain(address) && JsonValues.plain(subject)
                && JsonValues.plain(codecName)) {
            // StringBuilder, not +: string concatenation goes through method handles, slow until the JIT has them
            String text = new StringBuilder(320).append("{\"id\":\"").append(requestId)
                    .append("\",\"request_type\":\"single_in\",\"response_type\":\"many_out\",\"payload_codec\":\"")
                    .append(codecName).append("\",\"connection_info\":{\"transport\":\"tcp_server\",\"info\":\"{\\\"address\\\":\\\"")
                    .append(address).append("\\\",\\\"subject\\\":\\\"").append(subject)
                    .append("\\\",\\\"context\\\":\\\"").append(requestId)
                    .append("\\\",\\\"stream_type\\\":\\\"response\\\"}\"}}").toString();
            return text.getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        }
        return requestHeaderThroughGenerator(requestId, codec, address, subject);
    }

    /** {@link #requestHeader} through the JSON generator: what any string is written by. */
    static byte[] requestHeaderThroughGenerator(String requestId, PayloadCodec codec, String address, String subject) {
        Map<String, Object> info = new LinkedHashMap<>();
        info.put("address", address);
        info.put("subject", subject);
        info.put("context", requestId);
        info.put("stream_type", "response");
        Map<String, Object> connection = new LinkedHashMap<>();
        connection.put("transport", "tcp_server");
        connection.put("info", new String(JsonValues.write(info), java.nio.charset.StandardCharsets.UTF_8));
        Map<String, Object> header = new LinkedHashMap<>();
        header.put("id", requestId);
        header.put("request_type", "single_in");
        header.put("response_type", "many_out");
        header.put("payload_codec", codec.wireName());
        header.put("connection_info", connection);
        return JsonValues.write(header);
    }

    /**
     * A request's control header, checked: a single request answered by a stream, a known codec, a TCP call-home
     * address.
     *
     * @throws DynamoProtocolException naming what is missing, malformed or not spoken here
     */
    public static RequestControl parseRequestHeader(byte[] bytes) {
        Map<?, ?> header = object(JsonValues.parse(bytes, MAX_CONTROL_HEADER), "the request's control header");
        String id = string(header, "id", "the request's control header");
        String requestType = optionalString(header, "request_type");
        String responseType = optionalString(header, "response_type");
        if (requestType != null && !requestType.equals("single_in") || responseType != null
                && !responseType.equals("many_out")) {
            throw new DynamoProtocolException("request_type " + requestType + " / response_type " + responseType
                    + " is not spoken here: " + VERSION + " endpoints take single_in / many_out");
        }
        String codecName = optionalString(header, "payload_codec");
        PayloadCodec codec;
        try {
            codec = codecName == null ? PayloadCodec.JSON : PayloadCodec.fromWireName(codecName);
        } catch (IllegalArgumentException e) {
            throw new DynamoProtocolException("payload_codec \"" + codecName + "\" is not spoken here (" + VERSION
                    + ": json or msgpack)");
        }
        Map<?, ?> connection = object(header.get("connection_info"), "connection_info");
        String transport = string(connection, "transport", "connection_info");
        if (!transport.equals("tcp_server")) {
            throw new DynamoProtocolException("response transport \"" + transport + "\" is not spoken here: " + VERSION
                    + " over TCP calls home with tcp_server (QUIC response planes are not supported)");
        }
        String infoText = string(connection, "info", "connection_info");
        byte[] infoBytes = infoText.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        Map<?, ?> info = object(JsonValues.parse(infoBytes, MAX_CONTROL_HEADER), "connection_info.info");
        String address = string(info, "address", "connection_info.info");
        String subject = string(info, "subject", "connection_info.info");
        String context = optionalString(info, "context");
        String streamType = optionalString(info, "stream_type");
        if (streamType != null && !streamType.equals("response")) {
            throw new DynamoProtocolException("stream_type \"" + streamType + "\" is not spoken here (" + VERSION
                    + " calls home with a response stream)");
        }
        int colon = address.lastIndexOf(':');
        if (colon <= 0 || colon == address.length() - 1) {
            throw new DynamoProtocolException("call-home address \"" + address + "\" is not host:port");
        }
        String host = address.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        int port;
        try {
            port = Integer.parseInt(address.substring(colon + 1));
        } catch (NumberFormatException e) {
            throw new DynamoProtocolException("call-home address \"" + address + "\" has no port number");
        }
        if (port < 1 || port > 65535) {
            throw new DynamoProtocolException("call-home address \"" + address + "\" has port out of range");
        }
        return new RequestControl(id, codec, host, port, subject, context != null ? context : id);
    }

    public static byte[] handshake(String subject) {
        Map<String, Object> handshake = new LinkedHashMap<>();
        handshake.put("subject", subject);
        handshake.put("stream_type", "response");
        return JsonValues.write(handshake);
    }

    private static final byte[] HANDSHAKE_START = "{\"subject\":\"".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    private static final byte[] HANDSHAKE_END = "\",\"stream_type\":\"response\"}"
            .getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    private static final byte[] PROLOGUE_CLEAN = "{\"error\":null}".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

    /** The subject a call-home handshake names. */
    public static String parseHandshake(byte[] bytes) {
        // Dynamo's workers write {"subject":"<uuid>","stream_type":"response"}: read without a parser (once per call).
        if (bytes.length > HANDSHAKE_START.length + HANDSHAKE_END.length && startsWith(bytes, HANDSHAKE_START, 0)
                && startsWith(bytes, HANDSHAKE_END, bytes.length - HANDSHAKE_END.length)) {
            int from = HANDSHAKE_START.length;
            int to = bytes.length - HANDSHAKE_END.length;
            boolean plain = true;
            for (int i = from; i < to && plain; i++) {
                plain = bytes[i] >= 0x20 && bytes[i] <= 0x7e && bytes[i] != '"' && bytes[i] != '\\';
            }
            if (plain) {
                return new String(bytes, from, to - from, java.nio.charset.StandardCharsets.US_ASCII);
            }
        }
        Map<?, ?> handshake = object(JsonValues.parse(bytes, MAX_CONTROL_HEADER), "the call-home handshake");
        String subject = string(handshake, "subject", "the call-home handshake");
        String streamType = optionalString(handshake, "stream_type");
        if (streamType != null && !streamType.equals("response")) {
            throw new DynamoProtocolException("the call-home handshake's stream_type \"" + streamType
                    + "\" is not spoken here (" + VERSION + ")");
        }
        return subject;
    }

    /**
     * The prologue: {@code {"error":null}}, or the worker's reason for not streaming with Dynamo 1.6's
     * {@code typed_error} beside it.
     */
    public static byte[] prologue(@Nullable String error) {
        Map<String, Object> prologue = new LinkedHashMap<>();
        prologue.put("error", error);
        if (error != null) {
            Map<String, Object> typed = new LinkedHashMap<>();
            typed.put("error_type", "Unknown");
            typed.put("class", "Internal");
            typed.put("reason", "runtime.unclassified");
            typed.put("message", error);
            typed.put("diagnostic", error);
            prologue.put("typed_error", typed);
        }
        return JsonValues.write(prologue);
    }

    /** The worker's error from a prologue, or null when it has none. */
    public static @Nullable String parsePrologue(byte[] bytes) {
        if (java.util.Arrays.equals(bytes, PROLOGUE_CLEAN)) {
            return null; // the usual prologue, read without a parser
        }
        Map<?, ?> prologue = object(JsonValues.parse(bytes, MAX_CONTROL_HEADER), "the response prologue");
        if (!prologue.containsKey("error")) {
            throw new DynamoProtocolException("the response prologue has no \"error\" field (" + VERSION + ")");
        }
        Object error = prologue.get("error");
        if (error == null) {
            return null;
        }
        Object typed = prologue.get("typed_error");
        String message = error instanceof String text ? text : String.valueOf(error);
        if (typed instanceof Map<?, ?> typedMap && typedMap.get("message") instanceof String typedMessage
                && !message.contains(typedMessage)) {
            message = message + ": " + typedMessage;
        }
        return message;
    }

    /** A control frame on a response stream's connection. */
    public enum Control {
        STOP("stop"), KILL("kill"), SENTINEL("sentinel");

        private final String wireName;
        private final byte[] header;

        Control(String wireName) {
            this.wireName = wireName;
            this.header = ("\"" + wireName + "\"").getBytes(java.nio.charset.StandardCharsets.UTF_8);
        }

        public byte[] header() {
            return header.clone();
        }
    }

    private static final Control[] CONTROLS = Control.values();

    private static boolean startsWith(byte[] bytes, byte[] prefix, int at) {
        for (int i = 0; i < prefix.length; i++) {
            if (bytes[at + i] != prefix[i]) {
                return false;
            }
        }
        return true;
    }

    /** The control a header-only frame carries, or null when it is not one ({@code "stop"}, …). */
    public static @Nullable Control parseControl(byte[] bytes) {
        for (Control control : CONTROLS) {
            if (java.util.Arrays.equals(bytes, control.header)) {
                return control; // as Dynamo writes it, read without a parser
            }
        }
        Object value;
        try {
            value = JsonValues.parse(bytes, MAX_CONTROL_HEADER);
        } catch (DynamoProtocolException e) {
            return null;
        }
        if (value instanceof String name) {
            for (Control control : Control.values()) {
                if (control.wireName.equals(name)) {
                    return control;
                }
            }
        }
        return null;
    }

    /** What a body frame of the response stream carries. */
    public sealed interface StreamItem permits Data, ErrorEvent, Complete {
    }

    /** A response. */
    public record Data(DynamoResponse response) implements StreamItem {
    }

    /** The worker's handler failed. */
    public record ErrorEvent(String message, @Nullable String errorClass) implements StreamItem {
    }

    /** The stream's last body frame ({@code complete_final}). */
    public record Complete() implements StreamItem {
    }

    public static byte[] dataFrame(PayloadCodec codec, @Nullable Object data) {
        Map<String, Object> annotated = new LinkedHashMap<>();
        annotated.put("data", data);
        return envelope(codec, annotated);
    }

    public static byte[] dataFrame(PayloadCodec codec, DynamoResponse response) {
        Map<String, Object> annotated = new LinkedHashMap<>();
        if (response.data() != null) {
            annotated.put("data", response.data());
        }
        if (response.id() != null) {
            annotated.put("id", response.id());
        }
        if (response.event() != null) {
            annotated.put("event", response.event());
        }
        if (!response.comments().isEmpty()) {
            annotated.put("comment", new ArrayList<>(response.comments()));
        }
        return envelope(codec, annotated);
    }

    /**
     * An error event as a Dynamo 1.6.1 Python worker sends one when its handler raises (a {@code RuntimeError}):
     * Dynamo's error with the handler's message, byte for byte the same shape.
     */
    public static byte[] errorFrame(PayloadCodec codec, String message) {
        Map<String, Object> errorType = new LinkedHashMap<>();
        errorType.put("Backend", "Unknown");
        Map<String, Object> error = new LinkedHashMap<>();
        error.put("error_type", errorType);
        error.put("class", "Internal");
        error.put("reason", "backend.unknown");
        error.put("message", message);
        error.put("diagnostic", message);
        Map<String, Object> annotated = new LinkedHashMap<>();
        annotated.put("event", "error");
        annotated.put("error", error);
        return envelope(codec, annotated);
    }

    private static byte[] envelope(PayloadCodec codec, Map<String, Object> annotated) {
        Map<String, Object> envelope = new LinkedHashMap<>();
        envelope.put("data", annotated);
        envelope.put("complete_final", Boolean.FALSE);
        return Payloads.encode(codec, envelope);
    }

    public static byte[] completeFinal(PayloadCodec codec) {
        Map<String, Object> envelope = new LinkedHashMap<>();
        envelope.put("complete_final", Boolean.TRUE);
        return Payloads.encode(codec, envelope);
    }

    /**
     * A body frame of the response stream, decoded in the request's codec.
     *
     * @throws DynamoProtocolException if it is malformed or carries nothing known
     */
    public static StreamItem parseStreamBody(PayloadCodec codec, byte[] body) {
        Map<?, ?> envelope = object(Payloads.decode(codec, body, 0, body.length), "a response frame");
        Object complete = envelope.get("complete_final");
        Object annotated = envelope.get("data");
        if (annotated == null) {
            if (Boolean.TRUE.equals(complete)) {
                return new Complete();
            }
            throw new DynamoProtocolException("a response frame carries neither data nor complete_final (" + VERSION
                    + ")");
        }
        if (complete != null && !(complete instanceof Boolean)) {
            throw new DynamoProtocolException("a response frame's complete_final is not a boolean");
        }
        Map<?, ?> fields = object(annotated, "a response's Annotated envelope");
        Object event = fields.get("event");
        Object error = fields.get("error");
        if ("error".equals(event) || error != null) {
            return errorEvent(error);
        }
        if (event != null && !(event instanceof String)) {
            throw new DynamoProtocolException("a response's event is not a string");
        }
        Object id = fields.get("id");
        if (id != null && !(id instanceof String)) {
            throw new DynamoProtocolException("a response's id is not a string");
        }
        List<String> comments = List.of();
        Object comment = fields.get("comment");
        if (comment instanceof List<?> list) {
            List<String> texts = new ArrayList<>(list.size());
            for (Object text : list) {
                texts.add(String.valueOf(text));
            }
            comments = texts;
        } else if (comment != null) {
            throw new DynamoProtocolException("a response's comment is not a list");
        }
        return new Data(new DynamoResponse(fields.get("data"), (String) id, (String) event, comments));
    }

    private static ErrorEvent errorEvent(@Nullable Object error) {
        if (error instanceof Map<?, ?> map) {
            Object message = map.get("message");
            Object errorClass = map.get("class");
            return new ErrorEvent(message != null ? String.valueOf(message) : JsonText.of(map),
                    errorClass instanceof String text ? text : null);
        }
        return new ErrorEvent(error == null ? "(the worker sent an error event without a message)"
                : String.valueOf(error), null);
    }

    /** Short JSON text of a value for messages. */
    static final class JsonText {
        static String of(Object value) {
            try {
                return new String(JsonValues.write(value), java.nio.charset.StandardCharsets.UTF_8);
            } catch (IllegalArgumentException e) {
                return Values.describe(value);
            }
        }
    }

    private static Map<?, ?> object(@Nullable Object value, String what) {
        if (!(value instanceof Map<?, ?> map)) {
            throw new DynamoProtocolException(what + " is not an object but " + Values.describe(value) + " ("
                    + VERSION + ")");
        }
        return map;
    }

    private static String string(Map<?, ?> map, String field, String what) {
        Object value = map.get(field);
        if (!(value instanceof String text)) {
            throw new DynamoProtocolException(what + " has no string \"" + field + "\" (" + VERSION + ")");
        }
        return text;
    }

    private static @Nullable String optionalString(Map<?, ?> map, String field) {
        Object value = map.get(field);
        if (value == null) {
            return null;
        }
        if (!(value instanceof String text)) {
            throw new DynamoProtocolException("\"" + field + "\" is not a string (" + VERSION + ")");
        }
        return text;
    }
}
