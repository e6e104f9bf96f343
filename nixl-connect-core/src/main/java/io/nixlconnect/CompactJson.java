package io.nixlconnect;

import java.util.ArrayList;
import java.util.List;

/**
 * A fast path for the JSON of every small operation, in both directions, without a general-purpose mapper's
 * per-call objects (parser, contexts, buffers: most of what a 4 KiB operation allocated after zlib).
 *
 * <p>It only handles the compact form nixl-connect writes — no whitespace, strings of printable ASCII with
 * no escapes, integers within ±Long.MAX_VALUE, the metadata's exact shape — and says so by returning null for
 * anything else, which then goes through Jackson as before. So Jackson keeps every error message and every
 * lenient case (Python's spaced {@code json.dumps} output, escapes, big numbers, integers as strings), and a
 * document the fast path accepts reads as Jackson reads it.
 */
final class CompactJson {

    private CompactJson() {
    }

    /**
     * Writes the document Jackson writes for these fields, or returns null when a string would need
     * escaping (then the caller asks Jackson).
     */
    static String write(List<SerializedDescriptor> descriptors, String nixlMetadata, String notificationKey,
            int operationKind) {
        if (!plain(nixlMetadata) || !plain(notificationKey)) {
            return null;
        }
        if (descriptors.size() == 1) {
            SerializedDescriptor only = descriptors.get(0);
            if (!plain(only.device())) {
                return null;
            }
            // One concatenation: javac's string concatenation sizes the result exactly and allocates only it, where a
            // builder allocated its buffer and then the string's copy. Most operations publish one descriptor.
            return "{\"descriptors\":[{\"device\":\"" + only.device() + "\",\"ptr\":" + only.ptr() + ",\"size\":"
                    + only.size() + "}],\"nixl_metadata\":\"" + nixlMetadata + "\",\"notification_key\":\""
                    + notificationKey + "\",\"operation_kind\":" + operationKind + "}";
        }
        StringBuilder json = new StringBuilder(96 + 64 * descriptors.size() + nixlMetadata.length()
                + notificationKey.length());
        json.append("{\"descriptors\":[");
        for (int i = 0; i < descriptors.size(); i++) {
            SerializedDescriptor descriptor = descriptors.get(i);
            String device = descriptor.device();
            if (!plain(device)) {
                return null;
            }
            json.append(i == 0 ? "{\"device\":\"" : ",{\"device\":\"").append(device).append("\",\"ptr\":")
                    .append(descriptor.ptr()).append(",\"size\":").append(descriptor.size()).append('}');
        }
        json.append("],\"nixl_metadata\":\"").append(nixlMetadata).append("\",\"notification_key\":\"")
                .append(notificationKey).append("\",\"operation_kind\":").append(operationKind).append('}');
        return json.toString();
    }

    /** Printable ASCII without {@code "} or {@code \}: written as is by any JSON writer. */
    private static boolean plain(String text) {
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c < 0x20 || c > 0x7E || c == '"' || c == '\\') {
                return false;
            }
        }
        return true;
    }

    /**
     * Reads a compact document of exactly the metadata's shape — the four fields once each, in any order;
     * descriptors of exactly device, ptr and size — straight into {@link RdmaMetadata}, or returns null for
     * anything else: another shape, a malformed document, or values the constructors refuse (Jackson's path
     * then reads it and words the error).
     */
    static RdmaMetadata read(String json) {
        Reader reader = new Reader(json);
        try {
            RdmaMetadata metadata = reader.metadata();
            return metadata != null && reader.position == json.length() ? metadata : null;
        } catch (InvalidMetadataException e) {
            return null;
        }
    }

    private static final class Reader {
        private final String json;
        int position;

        Reader(String json) {
            this.json = json;
        }

        private boolean next(char expected) {
            if (position < json.length() && json.charAt(position) == expected) {
                position++;
                return true;
            }
            return false;
        }

        /** Whether the cursor is at {@code "name":}; consumes it if so (no string is made for the key). */
        private boolean key(String name) {
            int end = position + name.length() + 3;
            if (end <= json.length() && json.charAt(position) == '"' && json.regionMatches(position + 1, name, 0, name.length())
                    && json.charAt(end - 2) == '"' && json.charAt(end - 1) == ':') {
                position = end;
                return true;
            }
            return false;
        }

        RdmaMetadata metadata() {
            if (!next('{')) {
                return null;
            }
            List<SerializedDescriptor> descriptors = null;
            String nixlMetadata = null;
            String notificationKey = null;
            long kind = 0;
            boolean kindSeen = false;
            do {
                if (descriptors == null && key("descriptors")) {
                    descriptors = descriptors();
                    if (descriptors == null) {
                        return null;
                    }
                } else if (nixlMetadata == null && key("nixl_metadata")) {
                    if ((nixlMetadata = envelope()) == null) {
                        return null;
                    }
                } else if (notificationKey == null && key("notification_key")) {
                    if ((notificationKey = string()) == null) {
                        return null;
                    }
                } else if (!kindSeen && key("operation_kind")) {
                    kindSeen = true;
                    if ((kind = integer()) == Long.MIN_VALUE) {
                        return null;
                    }
                } else {
                    return null; // unknown, repeated or malformed field
                }
            } while (next(','));
            if (!next('}') || descriptors == null || nixlMetadata == null || notificationKey == null
                    || (kind != OperationKind.READ.value() && kind != OperationKind.WRITE.value())) {
                return null;
            }
            return RdmaMetadata.ofParsed(descriptors, nixlMetadata, notificationKey, OperationKind.fromValue((int) kind));
        }

        private List<SerializedDescriptor> descriptors() {
            if (!next('[')) {
                return null;
            }
            if (next(']')) {
                return new ArrayList<>(0);
            }
            SerializedDescriptor first = descriptor();
            if (first == null) {
                return null;
            }
            if (next(']')) {
                return List.of(first); // the usual one descriptor: no array list and its array
            }
            List<SerializedDescriptor> descriptors = new ArrayList<>();
            descriptors.add(first);
            while (next(',')) {
                SerializedDescriptor descriptor = descriptor();
                if (descriptor == null) {
                    return null;
                }
                descriptors.add(descriptor);
            }
            return next(']') ? descriptors : null;
        }

        private SerializedDescriptor descriptor() {
            if (!next('{')) {
                return null;
            }
            String device = null;
            long ptr = Long.MIN_VALUE;
            long size = Long.MIN_VALUE;
            do {
                if (device == null && key("device")) {
                    if ((device = device()) == null) {
                        return null;
                    }
                } else if (ptr == Long.MIN_VALUE && key("ptr")) {
                    if ((ptr = integer()) == Long.MIN_VALUE) {
                        return null;
                    }
                } else if (size == Long.MIN_VALUE && key("size")) {
                    if ((size = integer()) == Long.MIN_VALUE) {
                        return null;
                    }
                } else {
                    return null;
                }
            } while (next(','));
            if (!next('}') || device == null || ptr == Long.MIN_VALUE || size == Long.MIN_VALUE) {
                return null;
            }
            return new SerializedDescriptor(device, ptr, size);
        }

        /** A device string; the common {@code "cpu"} without making a string. */
        private String device() {
            if (json.startsWith("\"cpu\"", position)) {
                position += 5;
                return "cpu";
            }
            return string();
        }

        /**
         * The {@code nixl_metadata} string: a peer's envelope repeats in every operation it publishes, so when the
         * codec decoded this exact text lately, its string is returned instead of a new copy.
         */
        private String envelope() {
            int start = position + 1;
            int end = stringEnd();
            if (end < 0) {
                return null;
            }
            String known = NixlMetadataCodec.recentEnvelope(json, start, end);
            return known != null ? known : json.substring(start, end);
        }

        private String string() {
            int start = position + 1;
            int end = stringEnd();
            return end < 0 ? null : json.substring(start, end);
        }

        /** Moves past a string of printable ASCII without escapes; the index of its closing quote, or -1. */
        private int stringEnd() {
            if (!next('"')) {
                return -1;
            }
            while (position < json.length()) {
                char c = json.charAt(position);
                if (c == '"') {
                    return position++;
                }
                if (c < 0x20 || c > 0x7E || c == '\\') {
                    return -1;
                }
                position++;
            }
            return -1;
        }

        /**
         * {@code -?(0|[1-9][0-9]*)} within ±{@link Long#MAX_VALUE}, followed by a delimiter; {@link Long#MIN_VALUE}
         * (never returned for a number) for anything else: fractions, exponents, literals, larger numbers.
         */
        private long integer() {
            boolean negative = next('-');
            int digitsStart = position;
            long value = 0;
            while (position < json.length()) {
                char c = json.charAt(position);
                if (c < '0' || c > '9') {
                    break;
                }
                if (value > (Long.MAX_VALUE - (c - '0')) / 10) {
                    return Long.MIN_VALUE; // beyond 64 bits: Jackson reads it, and the validation words it
                }
                value = value * 10 + (c - '0');
                position++;
            }
            int digits = position - digitsStart;
            if (digits == 0 || (digits > 1 && json.charAt(digitsStart) == '0')) {
                return Long.MIN_VALUE;
            }
            if (position < json.length()) {
                char after = json.charAt(position);
                if (after != ',' && after != '}' && after != ']') {
                    return Long.MIN_VALUE; // a fraction, an exponent: Jackson reads it
                }
            }
            return negative ? -value : value;
        }
    }
}
