package io.nixlconnect;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The library's own JSON (RFC 8259), for the one document it reads and writes, {@link RdmaMetadata}.
 *
 * <p>{@link #read} turns a text into plain values — {@code Map} (fields in document order, a repeated name keeping its
 * last value), {@code List}, {@code String}, {@code Long} (or {@code BigInteger} beyond 64 bits), {@code Double} for
 * a fraction or exponent, {@code Boolean}, {@code null} — the values a general-purpose mapper's untyped binding
 * gives. So {@link RdmaMetadata}'s one validation reads them the same whether this reader or an application's Jackson
 * parsed the text. Strict as Jackson's defaults: no comments, trailing commas, leading zeros, single quotes,
 * unescaped control characters or text after the document. Bounded as Jackson's defaults: numbers of at most
 * {@value #MAX_NUMBER_CHARS} characters (converting a longer one could take seconds of CPU), nesting at most
 * {@value #MAX_DEPTH} deep (deeper would take the stack).
 *
 * <p>{@link #escape} writes a string's content as Jackson writes it, so {@link RdmaMetadata#toJson()} is byte for
 * byte what an application's mapper writes.
 */
final class Json {

    static final int MAX_NUMBER_CHARS = 1000;
    static final int MAX_DEPTH = 500;

    private static final char[] HEX = "0123456789ABCDEF".toCharArray();
    /** Strings every metadata document holds: returned as these constants rather than copied out of each text. */
    private static final String[] CONSTANTS = {"descriptors", "nixl_metadata", "notification_key", "operation_kind",
        "device", "ptr", "size", "cpu"};

    private Json() {
    }

    /** Not JSON, or beyond the limits; the message says what and where. */
    static final class MalformedException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        MalformedException(String message) {
            super(message, null, false, false);
        }
    }

    /**
     * The document's value, as the class comment says.
     *
     * @throws MalformedException if {@code text} is not one JSON value, or breaks a limit
     */
    static @Nullable Object read(String text) {
        Reader reader = new Reader(text);
        reader.whitespace();
        Object value = reader.value();
        reader.whitespace();
        if (reader.position != text.length()) {
            throw reader.malformed("text after the end of the document");
        }
        return value;
    }

    /**
     * {@code text} as the content of a JSON string (without the quotes), escaped as Jackson escapes: {@code "} and
     * {@code \}, and control characters ({@code \b \t \n \f \r} short, the others as {@code \}{@code u00XX}); the
     * string itself when nothing needs escaping.
     */
    static String escape(String text) {
        int first = 0;
        while (first < text.length() && !needsEscape(text.charAt(first))) {
            first++;
        }
        if (first == text.length()) {
            return text;
        }
        StringBuilder out = new StringBuilder(text.length() + 16).append(text, 0, first);
        for (int i = first; i < text.length(); i++) {
            char c = text.charAt(i);
            if (!needsEscape(c)) {
                out.append(c);
                continue;
            }
            out.append('\\');
            switch (c) {
                case '"' -> out.append('"');
                case '\\' -> out.append('\\');
                case '\b' -> out.append('b');
                case '\t' -> out.append('t');
                case '\n' -> out.append('n');
                case '\f' -> out.append('f');
                case '\r' -> out.append('r');
                default -> out.append("u00").append(HEX[c >> 4]).append(HEX[c & 0xF]);
            }
        }
        return out.toString();
    }

    private static boolean needsEscape(char c) {
        return c < 0x20 || c == '"' || c == '\\';
    }

    private static final class Reader {
        private final String text;
        int position;
        private int depth;

        Reader(String text) {
            this.text = text;
        }

        MalformedException malformed(String what) {
            return new MalformedException(what + " at character " + position);
        }

        void whitespace() {
            while (position < text.length()) {
                char c = text.charAt(position);
                if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                    return;
                }
                position++;
            }
        }

        private boolean at(char expected) {
            return position < text.length() && text.charAt(position) == expected;
        }

        @Nullable Object value() {
            if (position >= text.length()) {
                throw malformed("unexpected end of the document");
            }
            char c = text.charAt(position);
            return switch (c) {
                case '{' -> object();
                case '[' -> array();
                case '"' -> string();
                case 't' -> literal("true", Boolean.TRUE);
                case 'f' -> literal("false", Boolean.FALSE);
                case 'n' -> literal("null", null);
                default -> {
                    if (c == '-' || (c >= '0' && c <= '9')) {
                        yield number();
                    }
                    throw malformed("unexpected character '" + printable(c) + "'");
                }
            };
        }

        private static String printable(char c) {
            return c >= 0x20 && c < 0x7F ? String.valueOf(c) : String.format("\\u%04X", (int) c);
        }

        private @Nullable Object literal(String word, @Nullable Object value) {
            if (!text.startsWith(word, position)) {
                throw malformed("unexpected character '" + printable(text.charAt(position)) + "'");
            }
            position += word.length();
            return value;
        }

        private void enter() {
            if (++depth > MAX_DEPTH) {
                throw malformed("nesting deeper than " + MAX_DEPTH);
            }
            position++;
        }

        private Map<String, Object> object() {
            enter();
            Map<String, Object> object = new LinkedHashMap<>(8);
            whitespace();
            if (at('}')) {
                position++;
                depth--;
                return object;
            }
            while (true) {
                whitespace();
                if (!at('"')) {
                    throw malformed(position < text.length() ? "expected a field name" : "unexpected end of the document");
                }
                String name = string();
                whitespace();
                if (!at(':')) {
                    throw malformed("expected ':' after a field name");
                }
                position++;
                whitespace();
                object.put(name, value());
                whitespace();
                if (at(',')) {
                    position++;
                } else if (at('}')) {
                    position++;
                    depth--;
                    return object;
                } else {
                    throw malformed(position < text.length() ? "expected ',' or '}'" : "unexpected end of the document");
                }
            }
        }

        private List<Object> array() {
            enter();
            List<Object> array = new ArrayList<>(4);
            whitespace();
            if (at(']')) {
                position++;
                depth--;
                return array;
            }
            while (true) {
                whitespace();
                array.add(value());
                whitespace();
                if (at(',')) {
                    position++;
                } else if (at(']')) {
                    position++;
                    depth--;
                    return array;
                } else {
                    throw malformed(position < text.length() ? "expected ',' or ']'" : "unexpected end of the document");
                }
            }
        }

        private String string() {
            int start = ++position;
            while (position < text.length()) {
                char c = text.charAt(position);
                if (c == '"') {
                    return constantOrCopy(start, position++);
                }
                if (c == '\\') {
                    return escapedString(start);
                }
                if (c < 0x20) {
                    throw malformed("a control character in a string (it must be escaped)");
                }
                position++;
            }
            throw malformed("unexpected end of the document in a string");
        }

        private String constantOrCopy(int start, int end) {
            for (String constant : CONSTANTS) {
                if (constant.length() == end - start && text.startsWith(constant, start)) {
                    return constant;
                }
            }
            return text.substring(start, end);
        }

        private String escapedString(int start) {
            StringBuilder out = new StringBuilder(position - start + 16).append(text, start, position);
            while (position < text.length()) {
                char c = text.charAt(position);
                if (c == '"') {
                    position++;
                    return out.toString();
                }
                if (c < 0x20) {
                    throw malformed("a control character in a string (it must be escaped)");
                }
                if (c != '\\') {
                    out.append(c);
                    position++;
                    continue;
                }
                if (++position >= text.length()) {
                    break;
                }
                char escaped = text.charAt(position++);
                switch (escaped) {
                    case '"', '\\', '/' -> out.append(escaped);
                    case 'b' -> out.append('\b');
                    case 'f' -> out.append('\f');
                    case 'n' -> out.append('\n');
                    case 'r' -> out.append('\r');
                    case 't' -> out.append('\t');
                    case 'u' -> out.append(unicodeEscape());
                    default -> {
                        position--;
                        throw malformed("an unknown escape '\\" + printable(escaped) + "'");
                    }
                }
            }
            throw malformed("unexpected end of the document in a string");
        }

        private char unicodeEscape() {
            if (position + 4 > text.length()) {
                throw malformed("unexpected end of the document in a \\u escape");
            }
            int value = 0;
            for (int i = 0; i < 4; i++) {
                int digit = Character.digit(text.charAt(position), 16);
                if (digit < 0 || text.charAt(position) >= 0x80) {
                    throw malformed("a \\u escape needs four hex digits");
                }
                value = value << 4 | digit;
                position++;
            }
            return (char) value;
        }

        /** {@code -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?}, at most {@link #MAX_NUMBER_CHARS} characters. */
        private Object number() {
            int start = position;
            if (at('-')) {
                position++;
            }
            if (at('0')) {
                position++;
            } else if (!digits()) {
                throw malformed("a number needs a digit");
            }
            boolean integral = true;
            if (at('.')) {
                position++;
                integral = false;
                if (!digits()) {
                    throw malformed("a number needs a digit after '.'");
                }
            }
            if (at('e') || at('E')) {
                position++;
                integral = false;
                if (at('+') || at('-')) {
                    position++;
                }
                if (!digits()) {
                    throw malformed("a number needs a digit in its exponent");
                }
            }
            if (position - start > MAX_NUMBER_CHARS) {
                throw malformed("a number of " + (position - start) + " characters, more than the limit of "
                        + MAX_NUMBER_CHARS);
            }
            if (!integral) {
                return Double.parseDouble(text.substring(start, position));
            }
            boolean negative = text.charAt(start) == '-';
            int firstDigit = negative ? start + 1 : start;
            if (position - firstDigit <= 18) { // always fits in a long: read in place, no text copied
                long value = 0;
                for (int i = firstDigit; i < position; i++) {
                    value = value * 10 + (text.charAt(i) - '0');
                }
                return negative ? -value : value;
            }
            BigInteger big = new BigInteger(text.substring(start, position));
            return big.bitLength() < Long.SIZE ? (Object) big.longValue() : big;
        }

        private boolean digits() {
            int start = position;
            while (position < text.length() && text.charAt(position) >= '0' && text.charAt(position) <= '9') {
                position++;
            }
            return position > start;
        }
    }
}
