package io.nixlconnect.dynamo.internal.codec;

import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.dynamo.EncodeReply;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The plain values payloads are made of, as a Python worker sees them: what {@link #normalize} accepts and both codecs
 * write and read. {@code Map} (keys as written; JSON's are strings), {@code List}, {@code String}, {@code Long}
 * ({@code BigInteger} past 64 signed bits, up to 64 unsigned), {@code Double}, {@code Boolean}, {@code byte[]},
 * {@code null}; and, written as the maps Python's {@code model_dump()} gives, {@link RdmaMetadata} and
 * {@link EncodeReply}.
 */
public final class Values {

    /** Deepest nesting read or written (Jackson's default; deeper would take the stack). */
    public static final int MAX_DEPTH = 500;

    static final BigInteger MAX_UINT64 = BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE);
    static final BigInteger MIN_INT64 = BigInteger.valueOf(Long.MIN_VALUE);

    private Values() {
    }

    /**
     * {@code value} as plain values: integers widened to {@code Long}, floats to {@code Double}, arrays and
     * collections to lists, {@link RdmaMetadata} and {@link EncodeReply} to their maps.
     *
     * @throws IllegalArgumentException for a type no codec writes, a number out of range, or nesting deeper than
     *                                  {@value #MAX_DEPTH} (a cycle)
     */
    public static @Nullable Object normalize(@Nullable Object value) {
        return normalize(value, 0);
    }

    private static @Nullable Object normalize(@Nullable Object value, int depth) {
        if (depth > MAX_DEPTH) {
            throw new IllegalArgumentException("payload nests deeper than " + MAX_DEPTH + " levels (a cycle?)");
        }
        if (value == null || value instanceof String || value instanceof Boolean || value instanceof Long
                || value instanceof Double || value instanceof byte[]) {
            return value;
        }
        if (value instanceof Integer || value instanceof Short || value instanceof Byte) {
            return ((Number) value).longValue();
        }
        if (value instanceof Float f) {
            return f.doubleValue();
        }
        if (value instanceof BigInteger big) {
            if (big.compareTo(MIN_INT64) < 0 || big.compareTo(MAX_UINT64) > 0) {
                throw new IllegalArgumentException("integer " + big + " is outside 64 bits");
            }
            return big.bitLength() < 64 ? (Object) big.longValue() : big;
        }
        if (value instanceof BigDecimal decimal) {
            return decimal.doubleValue();
        }
        if (value instanceof RdmaMetadata metadata) {
            return JsonValues.parse(metadata.toJson().getBytes(java.nio.charset.StandardCharsets.UTF_8), Integer.MAX_VALUE);
        }
        if (value instanceof EncodeReply reply) {
            return normalize(reply.toValue(), depth);
        }
        if (value instanceof Map<?, ?> map) {
            Map<Object, Object> copy = new LinkedHashMap<>(Math.max(4, map.size() * 4 / 3 + 1));
            for (Map.Entry<?, ?> entry : map.entrySet()) {
                Object key = normalize(entry.getKey(), depth + 1);
                if (key instanceof Map || key instanceof List || key instanceof byte[]) {
                    throw new IllegalArgumentException("map keys must be strings, numbers or booleans, was "
                            + describe(key));
                }
                copy.put(key, normalize(entry.getValue(), depth + 1));
            }
            return copy;
        }
        if (value instanceof Collection<?> collection) {
            List<Object> copy = new ArrayList<>(collection.size());
            for (Object element : collection) {
                copy.add(normalize(element, depth + 1));
            }
            return copy;
        }
        if (value instanceof Object[] array) {
            return normalize(Arrays.asList(array), depth);
        }
        if (value instanceof int[] ints) {
            List<Object> copy = new ArrayList<>(ints.length);
            for (int i : ints) {
                copy.add((long) i);
            }
            return copy;
        }
        if (value instanceof long[] longs) {
            List<Object> copy = new ArrayList<>(longs.length);
            for (long l : longs) {
                copy.add(l);
            }
            return copy;
        }
        throw new IllegalArgumentException("a payload is made of Map, List, String, numbers, Boolean, byte[], null,"
                + " RdmaMetadata and EncodeReply; " + value.getClass().getName() + " is none of them (convert it first,"
                + " for example with your ObjectMapper's convertValue(value, Map.class))");
    }

    /**
     * A short description of a value's type for error messages, never its content (a payload is the application's
     * data). Not the core's description of a metadata field's value, which quotes it, and says object/array for JSON.
     */
    public static String describe(@Nullable Object value) {
        return value == null ? "null" : value instanceof Map ? "a map" : value instanceof List ? "a list"
                : value instanceof String ? "a string" : value instanceof Boolean ? "a boolean"
                : value instanceof byte[] ? "bytes" : value instanceof Number ? "a number"
                : value.getClass().getSimpleName();
    }
}
