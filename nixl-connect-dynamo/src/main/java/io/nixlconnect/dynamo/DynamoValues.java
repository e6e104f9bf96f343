package io.nixlconnect.dynamo;

import io.nixlconnect.InvalidMetadataException;
import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.dynamo.internal.codec.JsonValues;
import io.nixlconnect.dynamo.internal.codec.Values;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Payload values and the types that travel inside them. A payload is made of plain values, as a Python worker's
 * dicts and lists: {@code Map}, {@code List}, {@code String}, {@code Long} ({@code BigInteger} for unsigned 64-bit
 * values past {@code Long.MAX_VALUE}), {@code Double}, {@code Boolean}, {@code byte[]} (msgpack's binary) and
 * {@code null}; {@link RdmaMetadata} and {@link EncodeReply} may be put in as they are and travel as their maps.
 */
public final class DynamoValues {

    private DynamoValues() {
    }

    /**
     * The metadata as Python's {@code RdmaMetadata.model_dump()} gives it: a map with {@code descriptors} (maps of
     * {@code device}, {@code ptr}, {@code size}), {@code nixl_metadata}, {@code notification_key} and
     * {@code operation_kind}, in that order.
     */
    @SuppressWarnings("unchecked")
    public static Map<String, Object> fromRdmaMetadata(RdmaMetadata metadata) {
        return (Map<String, Object>) Values.normalize(metadata);
    }

    /**
     * The metadata a payload value carries (what Python's {@code RdmaMetadata.model_validate} reads), from either
     * codec, checked by every rule {@link RdmaMetadata#fromJson(String)} applies.
     *
     * @throws InvalidMetadataException naming the field that breaks a rule, or saying the value is not a map
     */
    public static RdmaMetadata toRdmaMetadata(@Nullable Object value) {
        if (value instanceof RdmaMetadata metadata) {
            return metadata;
        }
        if (!(value instanceof Map)) {
            throw new InvalidMetadataException("(document)", "must be a map, was " + Values.describe(value));
        }
        return RdmaMetadata.fromJson(toJson(value));
    }

    /**
     * The compact JSON of a payload value, for an application's own JSON mapper.
     *
     * @throws IllegalArgumentException for a value that is not made of plain values, or a float JSON cannot carry
     */
    public static String toJson(@Nullable Object value) {
        return new String(JsonValues.write(value), StandardCharsets.UTF_8);
    }

    /**
     * The plain value of a JSON text (for example one an application's mapper wrote).
     *
     * @throws DynamoProtocolException if the text is not one JSON value
     */
    public static @Nullable Object fromJson(String json) {
        byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
        return JsonValues.parse(bytes, bytes.length);
    }

    /**
     * {@code value} as plain values (integers as {@code Long}, arrays as lists, {@link RdmaMetadata} and
     * {@link EncodeReply} as maps): what a worker would receive.
     *
     * @throws IllegalArgumentException for a type no codec writes
     */
    public static @Nullable Object normalize(@Nullable Object value) {
        return Values.normalize(value);
    }
}
