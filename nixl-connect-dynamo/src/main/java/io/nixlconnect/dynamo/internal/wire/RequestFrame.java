package io.nixlconnect.dynamo.internal.wire;

import io.nixlconnect.dynamo.DynamoProtocolException;
import io.nixlconnect.dynamo.internal.codec.JsonValues;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A request on Dynamo's TCP request plane: {@code u16 pathLen | path | u16 headersLen | headers (JSON object of
 * strings) | u32 payloadLen | payload}, big-endian. The payload is a {@link TwoPart} message.
 *
 * @param path    the routing path, {@code {instance:x}/{ns}/{comp}/{ep}}
 * @param headers the headers ({@code request-id}, {@code x-endpoint-path}, …)
 * @param payload the two-part payload
 */
public record RequestFrame(String path, Map<String, String> headers, byte[] payload) {

    /** Longest headers document read (its length travels in 16 bits). */
    public static final int MAX_HEADERS = 65535;

    /** The frame's bytes. */
    public static byte[] encode(String path, Map<String, String> headers, byte[] payload) {
        byte[] pathBytes = path.getBytes(StandardCharsets.UTF_8);
        byte[] headerBytes = headers.size() == 2 ? twoHeaders(headers) : JsonValues.write(headers);
        if (pathBytes.length > 65535) {
            throw new IllegalArgumentException("endpoint path too long: " + pathBytes.length + " bytes");
        }
        if (headerBytes.length > MAX_HEADERS) {
            throw new IllegalArgumentException("headers too large: " + headerBytes.length + " bytes");
        }
        byte[] frame = new byte[2 + pathBytes.length + 2 + headerBytes.length + 4 + payload.length];
        int at = 0;
        at = putU16(frame, at, pathBytes.length);
        System.arraycopy(pathBytes, 0, frame, at, pathBytes.length);
        at += pathBytes.length;
        at = putU16(frame, at, headerBytes.length);
        System.arraycopy(headerBytes, 0, frame, at, headerBytes.length);
        at += headerBytes.length;
        at = putU32(frame, at, payload.length);
        System.arraycopy(payload, 0, frame, at, payload.length);
        return frame;
    }

    /** A caller's two headers ({@code request-id}, {@code x-endpoint-path}), as {@link JsonValues#write} writes them. */
    private static byte[] twoHeaders(Map<String, String> headers) {
        java.util.Iterator<Map.Entry<String, String>> entries = headers.entrySet().iterator();
        Map.Entry<String, String> first = entries.next();
        Map.Entry<String, String> second = entries.next();
        return JsonValues.writePlainObject(first.getKey(), first.getValue(), second.getKey(), second.getValue());
    }

    public static int encodedSize(int pathBytes, int headerBytes, int payloadBytes) {
        return 2 + pathBytes + 2 + headerBytes + 4 + payloadBytes;
    }

    public static void write(OutputStream out, String path, Map<String, String> headers, byte[] payload)
            throws IOException {
        out.write(encode(path, headers, payload));
    }

    /**
     * Reads the rest of a request frame whose first byte {@code first} was read by {@link FrameInput#beginFrame}.
     *
     * @throws FrameTooLargeException  if its lengths add up to more than {@code maxMessageSize} (read no further:
     *                                 the connection cannot be trusted to resynchronise)
     * @throws DynamoProtocolException if the path is not UTF-8 or the headers not a JSON object of strings (the frame
     *                                 was read whole: the connection may go on)
     */
    public static RequestFrame read(FrameInput in, int first, int maxMessageSize) throws IOException {
        byte[] second = in.readBytes(1);
        int pathLength = (first << 8) | (second[0] & 0xff);
        long total = 2L + pathLength + 2;
        if (total > maxMessageSize) {
            throw new FrameTooLargeException("a request", total, maxMessageSize);
        }
        byte[] path = in.readBytes(pathLength);
        int headersLength = in.readU16();
        total += headersLength + 4;
        if (total > maxMessageSize) {
            throw new FrameTooLargeException("a request", total, maxMessageSize);
        }
        byte[] headers = in.readBytes(headersLength);
        long payloadLength = in.readU32();
        total += payloadLength;
        if (total > maxMessageSize) {
            throw new FrameTooLargeException("a request", total, maxMessageSize);
        }
        byte[] payload = in.readBytes((int) payloadLength);
        return new RequestFrame(utf8(path, "endpoint path"), parseHeaders(headers), payload);
    }

    static String utf8(byte[] bytes, String what) {
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes)).toString();
        } catch (CharacterCodingException e) {
            throw new DynamoProtocolException("the " + what + " is not UTF-8");
        }
    }

    private static Map<String, String> parseHeaders(byte[] bytes) {
        if (bytes.length == 0) {
            return Map.of();
        }
        Object document = JsonValues.parse(bytes, MAX_HEADERS);
        if (!(document instanceof Map<?, ?> map)) {
            throw new DynamoProtocolException("the request headers are not a JSON object");
        }
        Map<String, String> headers = new LinkedHashMap<>();
        for (Map.Entry<?, ?> entry : map.entrySet()) {
            if (!(entry.getValue() instanceof String value)) {
                throw new DynamoProtocolException("request header " + entry.getKey() + " is not a string");
            }
            headers.put((String) entry.getKey(), value);
        }
        return headers;
    }

    static int putU16(byte[] buffer, int at, int value) {
        buffer[at] = (byte) (value >>> 8);
        buffer[at + 1] = (byte) value;
        return at + 2;
    }

    static int putU32(byte[] buffer, int at, long value) {
        buffer[at] = (byte) (value >>> 24);
        buffer[at + 1] = (byte) (value >>> 16);
        buffer[at + 2] = (byte) (value >>> 8);
        buffer[at + 3] = (byte) value;
        return at + 4;
    }

    static int putU64(byte[] buffer, int at, long value) {
        for (int i = 7; i >= 0; i--) {
            buffer[at + 7 - i] = (byte) (value >>> (8 * i));
        }
        return at + 8;
    }
}
