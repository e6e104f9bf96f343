package io.nixlconnect.dynamo.internal.codec;

import io.nixlconnect.dynamo.DynamoProtocolException;
import java.io.ByteArrayOutputStream;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import tools.jackson.core.JacksonException;
import tools.jackson.core.JsonGenerator;
import tools.jackson.core.JsonParser;
import tools.jackson.core.JsonToken;
import tools.jackson.core.ObjectReadContext;
import tools.jackson.core.ObjectWriteContext;
import tools.jackson.core.StreamReadConstraints;
import tools.jackson.core.StreamReadFeature;
import tools.jackson.core.json.JsonFactory;

/** JSON to and from {@link Values plain values}, through Jackson's streaming parser and generator, bounded. */
public final class JsonValues {

    private static final JsonFactory FACTORY = JsonFactory.builder()
            .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(Values.MAX_DEPTH)
                    .maxNumberLength(1000).maxStringLength(Integer.MAX_VALUE).maxNameLength(1 << 20).build())
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .build();

    private JsonValues() {
    }

    /**
     * The value of a JSON document of at most {@code maxBytes} bytes.
     *
     * @throws DynamoProtocolException if it is larger, not one JSON value, or beyond the parser's limits
     */
    public static @Nullable Object parse(byte[] json, int maxBytes) {
        return parse(json, 0, json.length, maxBytes);
    }

    public static @Nullable Object parse(byte[] json, int offset, int length, int maxBytes) {
        if (length > maxBytes) {
            throw new DynamoProtocolException("JSON document of " + length + " bytes is larger than the limit of "
                    + maxBytes);
        }
        try (JsonParser parser = FACTORY.createParser(ObjectReadContext.empty(), json, offset, length)) {
            JsonToken first = parser.nextToken();
            if (first == null) {
                throw new DynamoProtocolException("malformed JSON: the document is empty");
            }
            Object value = read(parser, first);
            if (parser.nextToken() != null) {
                throw new DynamoProtocolException("malformed JSON: text after the document at "
                        + parser.currentTokenLocation().getCharOffset());
            }
            return value;
        } catch (JacksonException e) {
            throw new DynamoProtocolException("malformed JSON: " + e.getOriginalMessage(), null);
        }
    }

    private static @Nullable Object read(JsonParser parser, JsonToken token) {
        switch (token) {
            case START_OBJECT: {
                Map<Object, Object> map = new LinkedHashMap<>();
                JsonToken next;
                while ((next = parser.nextToken()) == JsonToken.PROPERTY_NAME) {
                    String name = parser.currentName();
                    map.put(name, read(parser, parser.nextToken()));
                }
                if (next != JsonToken.END_OBJECT) {
                    throw new DynamoProtocolException("malformed JSON: unexpected " + next + " in an object");
                }
                return map;
            }
            case START_ARRAY: {
                List<Object> list = new ArrayList<>();
                JsonToken next;
                while ((next = parser.nextToken()) != JsonToken.END_ARRAY) {
                    if (next == null) {
                        throw new DynamoProtocolException("malformed JSON: the document ends inside an array");
                    }
                    list.add(read(parser, next));
                }
                return list;
            }
            case VALUE_STRING:
                return parser.getString();
            case VALUE_NUMBER_INT: {
                JsonParser.NumberType type = parser.getNumberType();
                if (type == JsonParser.NumberType.BIG_INTEGER) {
                    BigInteger big = parser.getBigIntegerValue();
                    if (big.compareTo(Values.MIN_INT64) < 0 || big.compareTo(Values.MAX_UINT64) > 0) {
                        throw new DynamoProtocolException("JSON integer " + big + " is outside 64 bits");
                    }
                    return big;
                }
                return parser.getLongValue();
            }
            case VALUE_NUMBER_FLOAT:
                return parser.getDoubleValue();
            case VALUE_TRUE:
                return Boolean.TRUE;
            case VALUE_FALSE:
                return Boolean.FALSE;
            case VALUE_NULL:
                return null;
            default:
                throw new DynamoProtocolException("malformed JSON: unexpected " + token);
        }
    }

    /**
     * Whether {@code text} is written in JSON as it is, between quotes: printable ASCII without a quote or a
     * backslash (what ids, addresses and endpoint paths are). The control documents built of such strings are written
     * without a generator (see {@link #writePlainObject}); anything else goes through {@link #write}.
     */
    public static boolean plain(@Nullable String text) {
        if (text == null) {
            return false;
        }
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') {
                return false;
            }
        }
        return true;
    }

    /**
     * A flat JSON object of {@link #plain} names and string values, byte for byte as {@link #write} writes it, without
     * creating a generator: control documents are written once per call, mostly while the JIT has not compiled
     * Jackson's generator yet. Falls back to {@link #write} when a name or value is not plain.
     */
    public static byte[] writePlainObject(String... namesAndValues) {
        StringBuilder json = new StringBuilder(16 * namesAndValues.length);
        json.append('{');
        for (int i = 0; i < namesAndValues.length; i += 2) {
            if (!plain(namesAndValues[i]) || !plain(namesAndValues[i + 1])) {
                Map<String, Object> map = new LinkedHashMap<>();
                for (int j = 0; j < namesAndValues.length; j += 2) {
                    map.put(namesAndValues[j], namesAndValues[j + 1]);
                }
                return write(map);
            }
            if (i > 0) {
                json.append(',');
            }
            json.append('"').append(namesAndValues[i]).append("\":\"").append(namesAndValues[i + 1]).append('"');
        }
        return json.append('}').toString().getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    }

    /**
     * The compact JSON of a value ({@link Values#normalize normalized} first).
     *
     * @throws IllegalArgumentException for a value no codec writes, or a float that JSON cannot carry (NaN, infinity)
     */
    public static byte[] write(@Nullable Object value) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(128);
        try (JsonGenerator generator = FACTORY.createGenerator(ObjectWriteContext.empty(), out)) {
            write(generator, Values.normalize(value));
        }
        return out.toByteArray();
    }

    private static void write(JsonGenerator generator, @Nullable Object value) {
        if (value == null) {
            generator.writeNull();
        } else if (value instanceof String text) {
            generator.writeString(text);
        } else if (value instanceof Boolean bool) {
            generator.writeBoolean(bool);
        } else if (value instanceof Long number) {
            generator.writeNumber(number);
        } else if (value instanceof BigInteger number) {
            generator.writeNumber(number);
        } else if (value instanceof Double number) {
            if (number.isNaN() || number.isInfinite()) {
                throw new IllegalArgumentException("JSON cannot carry " + number + " (use msgpack, or send it as a string)");
            }
            generator.writeNumber(number);
        } else if (value instanceof byte[] bytes) {
            // As serde_json writes bytes: an array of numbers.
            generator.writeStartArray();
            for (byte b : bytes) {
                generator.writeNumber(b & 0xff);
            }
            generator.writeEndArray();
        } else if (value instanceof Map<?, ?> map) {
            generator.writeStartObject();
            for (Map.Entry<?, ?> entry : map.entrySet()) {
                Object key = entry.getKey();
                generator.writeName(key instanceof String name ? name : String.valueOf(key));
                write(generator, entry.getValue());
            }
            generator.writeEndObject();
        } else if (value instanceof List<?> list) {
            generator.writeStartArray();
            for (Object element : list) {
                write(generator, element);
            }
            generator.writeEndArray();
        } else {
            throw new IllegalArgumentException("cannot write " + value.getClass().getName() + " as JSON");
        }
    }
}
