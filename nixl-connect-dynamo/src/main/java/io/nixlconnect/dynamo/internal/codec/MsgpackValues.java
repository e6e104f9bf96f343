package io.nixlconnect.dynamo.internal.codec;

import io.nixlconnect.dynamo.DynamoProtocolException;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessageFormat;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessagePackException;
import org.msgpack.core.MessagePacker;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.value.ValueType;

/**
 * msgpack to and from {@link Values plain values}, as Rust's {@code rmp-serde} with named maps writes them (what a
 * Dynamo 1.6 worker and client send). Reading never allocates more than the input can hold: every length a header
 * claims is checked against the bytes left first.
 */
public final class MsgpackValues {

    private MsgpackValues() {
    }

    /**
     * The value of {@code length} bytes of msgpack at {@code offset}: exactly one value, nothing after it.
     *
     * @throws DynamoProtocolException for malformed or truncated msgpack, an extension type, text that is not UTF-8,
     *                                 nesting deeper than {@value Values#MAX_DEPTH}, or bytes after the value
     */
    public static @Nullable Object parse(byte[] bytes, int offset, int length) {
        try (MessageUnpacker unpacker = MessagePack.newDefaultUnpacker(bytes, offset, length)) {
            if (!unpacker.hasNext()) {
                throw new DynamoProtocolException("malformed msgpack: the payload is empty");
            }
            Object value = read(unpacker, length, 0);
            if (unpacker.hasNext()) {
                throw new DynamoProtocolException("malformed msgpack: " + (length - unpacker.getTotalReadBytes())
                        + " bytes after the value");
            }
            return value;
        } catch (IOException | MessagePackException e) {
            throw new DynamoProtocolException("malformed msgpack: " + e.getMessage(), null);
        }
    }

    public static @Nullable Object parse(byte[] bytes) {
        return parse(bytes, 0, bytes.length);
    }

    private static long remaining(MessageUnpacker unpacker, int length) {
        return length - unpacker.getTotalReadBytes();
    }

    private static @Nullable Object read(MessageUnpacker unpacker, int length, int depth) throws IOException {
        if (depth > Values.MAX_DEPTH) {
            throw new DynamoProtocolException("malformed msgpack: nested deeper than " + Values.MAX_DEPTH + " levels");
        }
        if (!unpacker.hasNext()) {
            throw new DynamoProtocolException("malformed msgpack: truncated (the payload ends inside a value)");
        }
        MessageFormat format = unpacker.getNextFormat();
        ValueType type = format.getValueType();
        switch (type) {
            case NIL:
                unpacker.unpackNil();
                return null;
            case BOOLEAN:
                return unpacker.unpackBoolean();
            case INTEGER:
                if (format == MessageFormat.UINT64) {
                    BigInteger big = unpacker.unpackBigInteger();
                    return big.bitLength() < 64 ? (Object) big.longValue() : big;
                }
                return unpacker.unpackLong();
            case FLOAT:
                return unpacker.unpackDouble();
            case STRING: {
                int size = unpacker.unpackRawStringHeader();
                requireAvailable(unpacker, length, size, "string");
                byte[] raw = unpacker.readPayload(size);
                try {
                    return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                            .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(raw)).toString();
                } catch (CharacterCodingException e) {
                    throw new DynamoProtocolException("malformed msgpack: a string is not UTF-8");
                }
            }
            case BINARY: {
                int size = unpacker.unpackBinaryHeader();
                requireAvailable(unpacker, length, size, "binary");
                return unpacker.readPayload(size);
            }
            case ARRAY: {
                int size = unpacker.unpackArrayHeader();
                requireAvailable(unpacker, length, size, "array"); // each element takes at least one byte
                List<Object> list = new ArrayList<>(size);
                for (int i = 0; i < size; i++) {
                    list.add(read(unpacker, length, depth + 1));
                }
                return list;
            }
            case MAP: {
                int size = unpacker.unpackMapHeader();
                if (size < 0 || (long) size * 2 > remaining(unpacker, length)) {
                    throw new DynamoProtocolException("malformed msgpack: a map claims " + Integer.toUnsignedString(size)
                            + " entries, more than the " + remaining(unpacker, length) + " bytes left can hold");
                }
                Map<Object, Object> map = new LinkedHashMap<>(Math.max(4, size * 4 / 3 + 1));
                for (int i = 0; i < size; i++) {
                    Object key = read(unpacker, length, depth + 1);
                    if (key instanceof Map || key instanceof List || key instanceof byte[]) {
                        throw new DynamoProtocolException("malformed msgpack: a map key is " + Values.describe(key));
                    }
                    map.put(key, read(unpacker, length, depth + 1));
                }
                return map;
            }
            case EXTENSION:
                throw new DynamoProtocolException("malformed msgpack: extension type "
                        + unpacker.unpackExtensionTypeHeader().getType() + " is not a Dynamo payload value");
            default:
                throw new DynamoProtocolException("malformed msgpack: unknown format " + format);
        }
    }

    private static void requireAvailable(MessageUnpacker unpacker, int length, int size, String what) {
        long left = remaining(unpacker, length);
        if (size < 0 || size > left) {
            throw new DynamoProtocolException("malformed msgpack: a " + what + " claims "
                    + Integer.toUnsignedString(size) + (what.equals("array") ? " elements" : " bytes") + ", more than the "
                    + left + " bytes left");
        }
    }

    /**
     * The msgpack of a value ({@link Values#normalize normalized} first): maps with their keys as written, integers in
     * their smallest form, floats as float 64, {@code byte[]} as binary.
     *
     * @throws IllegalArgumentException for a value no codec writes
     */
    public static byte[] write(@Nullable Object value) {
        try (MessageBufferPacker packer = MessagePack.newDefaultBufferPacker()) {
            write(packer, Values.normalize(value));
            return packer.toByteArray();
        } catch (IOException e) {
            throw new IllegalStateException("writing to memory failed", e);
        }
    }

    private static void write(MessagePacker packer, @Nullable Object value) throws IOException {
        if (value == null) {
            packer.packNil();
        } else if (value instanceof String text) {
            packer.packString(text);
        } else if (value instanceof Boolean bool) {
            packer.packBoolean(bool);
        } else if (value instanceof Long number) {
            packer.packLong(number);
        } else if (value instanceof BigInteger number) {
            packer.packBigInteger(number);
        } else if (value instanceof Double number) {
            packer.packDouble(number);
        } else if (value instanceof byte[] bytes) {
            packer.packBinaryHeader(bytes.length);
            packer.writePayload(bytes);
        } else if (value instanceof Map<?, ?> map) {
            packer.packMapHeader(map.size());
            for (Map.Entry<?, ?> entry : map.entrySet()) {
                write(packer, entry.getKey());
                write(packer, entry.getValue());
            }
        } else if (value instanceof List<?> list) {
            packer.packArrayHeader(list.size());
            for (Object element : list) {
                write(packer, element);
            }
        } else {
            throw new IllegalArgumentException("cannot write " + value.getClass().getName() + " as msgpack");
        }
    }
}
