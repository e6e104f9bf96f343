package io.nixlconnect.dynamo.internal.wire;

import java.io.IOException;

/**
 * Dynamo's two-part message: {@code u64 headerLen | u64 bodyLen | u64 checksum | header | body}, big-endian. Release
 * builds of Dynamo send checksum 0 and check none; so does this.
 *
 * @param header the header part (empty when none)
 * @param body   the body part (empty when none)
 */
public record TwoPart(byte[] header, byte[] body) {

    public static final int PREFIX = 24;
    private static final byte[] EMPTY = new byte[0];

    public static TwoPart headerOnly(byte[] header) {
        return new TwoPart(header, EMPTY);
    }

    public static TwoPart bodyOnly(byte[] body) {
        return new TwoPart(EMPTY, body);
    }

    public byte[] encode() {
        byte[] frame = new byte[PREFIX + header.length + body.length];
        RequestFrame.putU64(frame, 0, header.length);
        RequestFrame.putU64(frame, 8, body.length);
        RequestFrame.putU64(frame, 16, 0);
        System.arraycopy(header, 0, frame, PREFIX, header.length);
        System.arraycopy(body, 0, frame, PREFIX + header.length, body.length);
        return frame;
    }

    /**
     * Parses a whole message (a request's payload).
     *
     * @throws io.nixlconnect.dynamo.DynamoProtocolException if the lengths do not add up to the bytes given
     */
    public static TwoPart parse(byte[] bytes, int maxHeader) {
        if (bytes.length < PREFIX) {
            throw new io.nixlconnect.dynamo.DynamoProtocolException("a two-part message of " + bytes.length
                    + " bytes is shorter than its 24-byte prefix");
        }
        long headerLength = getU64(bytes, 0);
        long bodyLength = getU64(bytes, 8);
        long available = bytes.length - PREFIX;
        if (Long.compareUnsigned(headerLength, available) > 0 || Long.compareUnsigned(bodyLength, available) > 0
                || headerLength + bodyLength != available) {
            throw new io.nixlconnect.dynamo.DynamoProtocolException("a two-part message's lengths (header "
                    + Long.toUnsignedString(headerLength) + ", body " + Long.toUnsignedString(bodyLength)
                    + ") do not add up to its " + available + " bytes");
        }
        if (headerLength > maxHeader) {
            throw new FrameTooLargeException("a control header", headerLength, maxHeader);
        }
        byte[] header = new byte[(int) headerLength];
        byte[] body = new byte[(int) bodyLength];
        System.arraycopy(bytes, PREFIX, header, 0, header.length);
        System.arraycopy(bytes, PREFIX + header.length, body, 0, body.length);
        return new TwoPart(header, body);
    }

    /**
     * Reads a message whose first byte was read by {@link FrameInput#beginFrame}; nothing is allocated before the
     * lengths are checked against {@code maxMessageSize}.
     */
    public static TwoPart read(FrameInput in, int first, int maxMessageSize) throws IOException {
        byte[] prefix = new byte[PREFIX];
        prefix[0] = (byte) first;
        in.readFully(prefix, 1, PREFIX - 1);
        long headerLength = getU64(prefix, 0);
        long bodyLength = getU64(prefix, 8);
        if (Long.compareUnsigned(headerLength, maxMessageSize) > 0 || Long.compareUnsigned(bodyLength, maxMessageSize) > 0
                || PREFIX + headerLength + bodyLength > maxMessageSize) {
            long total = Long.compareUnsigned(headerLength, maxMessageSize) > 0 ? headerLength
                    : Long.compareUnsigned(bodyLength, maxMessageSize) > 0 ? bodyLength : PREFIX + headerLength + bodyLength;
            throw new FrameTooLargeException("a response-stream message", total, maxMessageSize);
        }
        byte[] header = headerLength == 0 ? EMPTY : in.readBytes((int) headerLength);
        byte[] body = bodyLength == 0 ? EMPTY : in.readBytes((int) bodyLength);
        return new TwoPart(header, body);
    }

    static long getU64(byte[] bytes, int at) {
        long value = 0;
        for (int i = 0; i < 8; i++) {
            value = (value << 8) | (bytes[at + i] & 0xff);
        }
        return value;
    }
}
