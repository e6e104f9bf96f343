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
        Object value = reader.value();
        reader.end();
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

    /**
     * A pull reader over the text: its caller walks the document value by value ({@link #beginObject},
     * {@link #name}, {@link #nextField}, {@link #beginArray}, {@link #nextElement}) and reads each value into what it
     * needs: {@link #value()} as plain values, {@link #smallInteger()} as a long without boxing. {@link #read} is
     * this reader building plain values; {@link RdmaMetadata#fromJson} reads its document straight into its fields.
     * Every refusal is a {@link MalformedException}.
     */
    static final class Reader {
        /** What {@link #smallInteger()} returns when the next value is not an integer it reads. */
        static final long NOT_A_SMALL_INTEGER = Long.MIN_VALUE;

        private final String text;
        private int position;
        private int depth;

        Reader(String text) {
            this.text = text;
        }

        private MalformedException malformed(String what) {
            return new MalformedException(what + " at character " + position);
        }

        private void whitespace() {
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

        /** The first character of the next value (whitespace skipped), not consumed. */
        char peek() {
            whitespace();
            if (position >= text.length()) {
                throw malformed("unexpected end of the document");
            }
            return text.charAt(position);
        }

        /** Characters not read yet. */
        int remaining() {
            return text.length() - position;
        }

        /** After the document's one value: nothing but whitespace may follow. */
        void end() {
            whitespace();
            if (position != text.length()) {
                throw malformed("text after the end of the document");
            }
        }

        /** Consumes the {@code '{'} {@link #peek()} saw; true if a field follows, false if the object is empty. */
        boolean beginObject() {
            enter();
            whitespace();
            if (at('}')) {
                position++;
                depth--;
                return false;
            }
            return true;
        }

        /** A field's name and its {@code ':'}; its value comes next. Known names come back as constants, not copies. */
        String name() {
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
            return name;
        }

        /** After a field's value: true if another field follows, false at the object's {@code '}'} (consumed). */
        boolean nextField() {
            return next('}', "expected ',' or '}'");
        }

        /** Consumes the {@code '['} {@link #peek()} saw; true if an element follows, false if the array is empty. */
        boolean beginArray() {
            enter();
            whitespace();
            if (at(']')) {
                position++;
                depth--;
                return false;
            }
            return true;
        }

        /** After an element: true if another follows, false at the array's {@code ']'} (consumed). */
        boolean nextElement() {
            return next(']', "expected ',' or ']'");
        }

        private boolean next(char close, String expected) {
            whitespace();
            if (at(',')) {
                position++;
                return true;
            }
            if (at(close)) {
                position++;
                depth--;
                return false;
            }
            throw malformed(position < text.length() ? expected : "unexpected end of the document");
        }

        /**
         * The next value if it is an integer of at most 18 digits (always a long), read in place: no text copied, no
         * box; otherwise nothing is consumed and the result is {@link #NOT_A_SMALL_INTEGER} ({@link #value()} then
         * reads it, or refuses it as JSON).
         */
        long smallInteger() {
            whitespace();
            int i = position;
            boolean negative = at('-');
            if (negative) {
                i++;
            }
            int firstDigit = i;
            long value = 0;
            while (i < text.length() && text.charAt(i) >= '0' && text.charAt(i) <= '9') {
                value = value * 10 + (text.charAt(i++) - '0');
            }
            int digits = i - firstDigit;
            if (digits == 0 || digits > 18 || (digits > 1 && text.charAt(firstDigit) == '0')
                    || (i < text.length() && (text.charAt(i) == '.' || text.charAt(i) == 'e' || text.charAt(i) == 'E'))) {
                return NOT_A_SMALL_INTEGER;
            }
            position = i;
            return negative ? -value : value;
        }

        /** The next value as plain values, as the class comment says. */
        @Nullable Object value() {
            char c = peek();
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
            Map<String, Object> object = new LinkedHashMap<>(8);
            if (beginObject()) {
                do {
                    String name = name();
                    object.put(name, value());
                } while (nextField());
            }
            return object;
        }

        private List<Object> array() {
            List<Object> array = new ArrayList<>(4);
            if (beginArray()) {
                do {
                    array.add(value());
                } while (nextElement());
            }
            return array;
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
