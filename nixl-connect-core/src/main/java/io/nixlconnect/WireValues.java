package io.nixlconnect;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** Validation of untyped JSON values the way pydantic's lax mode reads them. */
final class WireValues {

    private WireValues() {
    }

    /** An integer field: JSON integers, integral floats and decimal-digit strings, as pydantic accepts. */
    static long requireLong(Object value, String field) {
        if (value == null) {
            throw new InvalidMetadataException(field, "is missing (null)");
        }
        try {
            if (value instanceof Integer || value instanceof Long || value instanceof Short
                    || value instanceof Byte) {
                return ((Number) value).longValue();
            }
            if (value instanceof BigInteger big) {
                return big.longValueExact();
            }
            if (value instanceof Double || value instanceof Float || value instanceof BigDecimal) {
                return new BigDecimal(value.toString()).longValueExact();
            }
            if (value instanceof String text) {
                return new BigInteger(text.trim()).longValueExact();
            }
        } catch (ArithmeticException | NumberFormatException e) {
            throw new InvalidMetadataException(field, "must be an integer in the signed 64-bit range, was " + value);
        }
        throw new InvalidMetadataException(field, "must be an integer, was " + describe(value));
    }

    static String requireString(Object value, String field) {
        if (value == null) {
            throw new InvalidMetadataException(field, "is missing (null)");
        }
        if (value instanceof String text) {
            return text;
        }
        throw new InvalidMetadataException(field, "must be a string, was " + describe(value));
    }

    static void refuseUnknownFields(Map<?, ?> object, Set<String> known, String prefix) {
        for (Object key : object.keySet()) {
            if (!known.contains(String.valueOf(key))) {
                throw new InvalidMetadataException(prefix + key, "is not allowed (unknown field; expected only " + known + ")");
            }
        }
    }

    static String describe(Object value) {
        if (value == null) {
            return "null";
        }
        if (value instanceof Map) {
            return "an object";
        }
        if (value instanceof List) {
            return "an array";
        }
        if (value instanceof Boolean) {
            return "a boolean";
        }
        return value.getClass().getSimpleName() + " " + value;
    }
}
