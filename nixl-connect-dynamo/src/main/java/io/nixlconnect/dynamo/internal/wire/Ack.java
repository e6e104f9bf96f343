package io.nixlconnect.dynamo.internal.wire;

import io.nixlconnect.dynamo.DynamoProtocolException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * The worker's answer to each request frame, in order: {@code u32 len | text}; empty accepts the request, anything
 * else refuses it ({@code "Server overloaded: …"}, {@code "Server unavailable: …"}, a decode error).
 */
public final class Ack {

    /** Longest refusal read: Dynamo's are one line. */
    public static final int MAX_ACK = 64 * 1024;

    /** Dynamo's refusal when the worker is at capacity. */
    public static final String OVERLOADED = "Server overloaded: worker at capacity";

    private static final byte[] ACCEPTED = {0, 0, 0, 0};

    /** Dynamo 1.6.1's words for a frame past the limit (the worker then closes the connection). */
    public static String tooLarge(FrameTooLargeException e) {
        return "Read error: message too large: " + e.size() + " bytes (max: " + e.limit() + " bytes)";
    }

    private Ack() {
    }

    public static byte[] accepted() {
        return ACCEPTED.clone();
    }

    public static byte[] refused(String reason) {
        byte[] text = reason.getBytes(StandardCharsets.UTF_8);
        byte[] frame = new byte[4 + text.length];
        RequestFrame.putU32(frame, 0, text.length);
        System.arraycopy(text, 0, frame, 4, text.length);
        return frame;
    }

    /**
     * The rest of an acknowledgement whose first byte was read.
     *
     * @return "" for accepted, else the refusal
     * @throws DynamoProtocolException if it is longer than {@link #MAX_ACK}
     */
    public static String read(FrameInput in, int first) throws IOException {
        byte[] rest = in.readBytes(3);
        long length = ((long) first << 24) | ((rest[0] & 0xff) << 16) | ((rest[1] & 0xff) << 8) | (rest[2] & 0xff);
        if (length > MAX_ACK) {
            throw new FrameTooLargeException("an acknowledgement", length, MAX_ACK);
        }
        if (length == 0) {
            return "";
        }
        return new String(in.readBytes((int) length), StandardCharsets.UTF_8);
    }
}
