package io.nixlconnect;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/** Validation of untyped JSON values the way pydantic's lax mode reads them. */
final class WireValues {

    /**
     * Longest integer text converted: a signed 64-bit value has at most 19 digits, plus a sign. Anything longer is
     * refused before conversion ({@code BigInteger} parsing is quadratic: a million digits take seconds of CPU).
     */
    static final int MAX_INTEGER_CHARS = 20;

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
            if (value instanceof BigDecimal decimal) {
                if (decimal.precision() - decimal.scale() > MAX_INTEGER_CHARS) {
                    throw new ArithmeticException("too large");
                }
                return decimal.longValueExact();
            }
            if (value instanceof Double || value instanceof Float) {
                return new BigDecimal(value.toString()).longValueExact();
            }
            if (value instanceof String text) {
                String digits = text.trim();
                if (digits.length() > MAX_INTEGER_CHARS) {
                    throw new InvalidMetadataException(field, "must be an integer in the signed 64-bit range; a text of "
                            + digits.length() + " characters is longer than any (refused before conversion)");
                }
                return new BigInteger(digits).longValueExact();
            }
        } catch (ArithmeticException | NumberFormatException e) {
            throw new InvalidMetadataException(field, "must be an integer in the signed 64-bit range, was "
                    + abbreviate(String.valueOf(value)));
        }
        throw new InvalidMetadataException(field, "must be an integer, was " + describe(value));
    }

    private static String abbreviate(String text) {
        return text.length() <= 64 ? text : text.substring(0, 32) + "…(" + text.length() + " characters)";
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

    /** The refusal of a field that is not one of {@code known}. */
    static InvalidMetadataException unknownField(String field, List<String> known) {
        return new InvalidMetadataException(field, "is not allowed (unknown field; expected only " + known + ")");
    }

    /**
     * A value as JSON names it ({@code a string 'READ'}, {@code a number 1.5}), whatever the parser's representation of
     * it: this reader's {@code Long} and a Jackson mapper's {@code Integer} or {@code BigInteger} read alike.
     */
    static String describe(@Nullable Object value) {
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
        if (value instanceof Number) {
            return "a number " + abbreviate(value.toString());
        }
        return "a string '" + abbreviate(value.toString()) + "'";
    }
}
