package io.nixlconnect;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonRawValue;
import com.fasterxml.jackson.annotation.JsonValue;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What a passive operation publishes so that a peer can read from or write into its buffers:
 * the descriptors, the passive agent's NIXL metadata, the notification key and the operation kind.
 *
 * <p>Immutable. Its JSON form is exactly Python Dynamo's (pydantic v2, compact, fields in this order):
 * <pre>{"descriptors":[{"device":"cpu","ptr":4096,"size":16}],"nixl_metadata":"b64:…","notification_key":"…","operation_kind":1}</pre>
 * It travels as a REST request or response body with an application's own Jackson mapper (2 or 3): the mapper writes
 * {@link #toJson()} as it is, and hands what it parsed to the validation {@link #fromJson(String)} applies, so both
 * read, refuse and word refusals alike. {@link #toJson()} and {@link #fromJson(String)} need no mapper at all.
 *
 * <p>Every rule of the wire format is checked on construction, and a broken rule raises an
 * {@link InvalidMetadataException} that names the field. The NIXL metadata is checked up front (it must
 * decode and inflate, to at most {@link #MAX_NIXL_METADATA_BYTES}, through a small buffer: no decoded
 * bytes are kept), so a malformed or hostile document is refused before any memory is registered, read
 * or written; a connector then decodes it once more under its own, usually smaller, {@code maxMetadataSize}.
 */
public final class RdmaMetadata {

    /** Upper bound on decoded NIXL agent metadata anywhere (a connector's {@code maxMetadataSize} is at most this). */
    public static final int MAX_NIXL_METADATA_BYTES = 64 * 1024 * 1024;

    private static final List<String> FIELDS = List.of("descriptors", "nixl_metadata", "notification_key", "operation_kind");

    private final List<SerializedDescriptor> descriptors;
    private final String nixlMetadata;
    private final String notificationKey;
    private final OperationKind operationKind;

    /**
     * @param descriptors     the passive side's buffers; at least one
     * @param nixlMetadata    {@code "b64:"} + base64(zlib(agent metadata)), or legacy lowercase hex of the zlib bytes
     * @param notificationKey the notification the active side sends when done; not empty
     * @param operationKind   {@link OperationKind#READ} or {@link OperationKind#WRITE}
     * @throws InvalidMetadataException naming the field that breaks a rule
     */
    public RdmaMetadata(List<SerializedDescriptor> descriptors, String nixlMetadata, String notificationKey,
            OperationKind operationKind) {
        this(descriptors, nixlMetadata, notificationKey, operationKind, null, false);
    }

    /**
     * {@code decoded}: the agent metadata {@code nixlMetadata} encodes, when the caller has it (not kept); null checks
     * that it decodes. {@code owned}: the caller hands {@code descriptors} over, unmodifiable (its own list wrapped, or
     * {@code List.of}) and never changed, so it
     * is kept as it is.
     */
    private RdmaMetadata(List<SerializedDescriptor> descriptors, String nixlMetadata, String notificationKey,
            OperationKind operationKind, byte[] decoded, boolean owned) {
        if (descriptors == null) {
            throw new InvalidMetadataException("descriptors", "is missing (null)");
        }
        if (descriptors.isEmpty()) {
            throw new InvalidMetadataException("descriptors", "must contain at least one descriptor");
        }
        for (int i = 0; i < descriptors.size(); i++) {
            if (descriptors.get(i) == null) {
                throw new InvalidMetadataException("descriptors[" + i + "]", "must not be null");
            }
        }
        if (nixlMetadata == null) {
            throw new InvalidMetadataException("nixl_metadata", "is missing (null)");
        }
        if (notificationKey == null) {
            throw new InvalidMetadataException("notification_key", "is missing (null)");
        }
        if (notificationKey.isEmpty()) {
            throw new InvalidMetadataException("notification_key", "must not be empty");
        }
        if (operationKind != OperationKind.READ && operationKind != OperationKind.WRITE) {
            throw new InvalidMetadataException("operation_kind", "must be 1 (READ) or 2 (WRITE), was " + operationKind);
        }
        this.descriptors = owned ? descriptors : Collections.unmodifiableList(new ArrayList<>(descriptors));
        if (decoded == null) { // non-null: we encoded it ourselves, nothing to check
            NixlMetadataCodec.validate(nixlMetadata, MAX_NIXL_METADATA_BYTES);
        }
        this.nixlMetadata = nixlMetadata;
        this.notificationKey = notificationKey;
        this.operationKind = operationKind;
    }

    /**
     * Builds metadata from raw agent metadata, encoding it the way Python Dynamo does ({@code b64:} + zlib).
     *
     * @throws InvalidMetadataException if {@code agentMetadata} is null, empty or larger than {@link #MAX_NIXL_METADATA_BYTES}
     */
    public static RdmaMetadata of(List<SerializedDescriptor> descriptors, byte[] agentMetadata, String notificationKey,
            OperationKind operationKind) {
        return encoded(descriptors, agentMetadata, notificationKey, operationKind, false);
    }

    /**
     * As {@link #of(List, byte[], String, OperationKind)}, with the agent metadata in the legacy form, lowercase hex of
     * the zlib bytes with no prefix, as Python's {@code metadata(hex_encode=True)} writes it (for peers older than the
     * {@code b64:} form).
     *
     * @throws InvalidMetadataException if {@code agentMetadata} is null, empty or larger than {@link #MAX_NIXL_METADATA_BYTES}
     */
    public static RdmaMetadata ofHexEncoded(List<SerializedDescriptor> descriptors, byte[] agentMetadata,
            String notificationKey, OperationKind operationKind) {
        return encoded(descriptors, agentMetadata, notificationKey, operationKind, true);
    }

    private static RdmaMetadata encoded(List<SerializedDescriptor> descriptors, byte[] agentMetadata,
            String notificationKey, OperationKind operationKind, boolean hex) {
        checkAgentMetadata(agentMetadata);
        byte[] copy = agentMetadata.clone();
        return new RdmaMetadata(descriptors, hex ? NixlMetadataCodec.encodeHex(copy) : NixlMetadataCodec.encode(copy),
                notificationKey, operationKind, copy, false);
    }

    /**
     * Metadata whose agent metadata the caller has already encoded ({@code encoded} is {@code raw}'s encoding); the
     * caller hands {@code descriptors} over. Nothing is copied.
     */
    static RdmaMetadata ofEncoded(List<SerializedDescriptor> descriptors, byte[] raw, String encoded,
            String notificationKey, OperationKind operationKind) {
        checkAgentMetadata(raw);
        return new RdmaMetadata(Collections.unmodifiableList(descriptors), encoded, notificationKey, operationKind, raw,
                true);
    }

    /** Parsed metadata: the parser hands {@code descriptors} over, unmodifiable (not copied); everything is checked. */
    static RdmaMetadata ofParsed(List<SerializedDescriptor> descriptors, String nixlMetadata, String notificationKey,
            OperationKind operationKind) {
        return new RdmaMetadata(descriptors, nixlMetadata, notificationKey, operationKind, null, true);
    }

    private static void checkAgentMetadata(byte[] agentMetadata) {
        if (agentMetadata == null || agentMetadata.length == 0) {
            throw new InvalidMetadataException("nixl_metadata", "must not be empty");
        }
        if (agentMetadata.length > MAX_NIXL_METADATA_BYTES) {
            throw new InvalidMetadataException("nixl_metadata", "decodes to " + agentMetadata.length
                    + " bytes, more than the limit of " + MAX_NIXL_METADATA_BYTES);
        }
    }

    /**
     * The document's fields as a reader found them, checked by {@link #build} in one order whoever read them
     * ({@link #fromJson} from the text, {@link #fromTree} from a mapper's plain values): an unknown field (the first
     * in document order), then each field in wire order (missing, wrong type, its rules), then the constructor's.
     * A repeated field keeps its last value, as a mapper's map does.
     */
    private static final class Fields {
        private @Nullable String unknown;
        /** The descriptors read, or null when the field is missing or not an array ({@link #descriptorsValue}). */
        private @Nullable List<SerializedDescriptor> descriptors;
        private @Nullable Object descriptorsValue;
        /** The first descriptor refused, thrown once the document is known to be JSON and earlier checks passed. */
        private @Nullable InvalidMetadataException descriptorRefused;
        private @Nullable Object nixlMetadata;
        private @Nullable Object notificationKey;
        private @Nullable Object operationKind;

        private void field(String name, @Nullable Object value) {
            switch (name) {
                case "descriptors" -> {
                    descriptors = null;
                    descriptorRefused = null;
                    descriptorsValue = value;
                    if (value instanceof List<?> list) {
                        List<SerializedDescriptor> read = new ArrayList<>(list.size());
                        SerializedDescriptor.Fields at = new SerializedDescriptor.Fields();
                        for (int i = 0; i < list.size() && descriptorRefused == null; i++) {
                            at.start(i);
                            try {
                                read.add(SerializedDescriptor.fromMap(list.get(i), at));
                            } catch (InvalidMetadataException refused) {
                                descriptorRefused = refused;
                            }
                        }
                        descriptors = Collections.unmodifiableList(read);
                    }
                }
                case "nixl_metadata" -> nixlMetadata = value;
                case "notification_key" -> notificationKey = value;
                case "operation_kind" -> operationKind = value;
                default -> {
                    if (unknown == null) {
                        unknown = name;
                    }
                }
            }
        }

        /** The descriptors field as {@link #fromJson} reads it: straight into descriptors, one field holder for all. */
        private void descriptors(Json.Reader reader) {
            if (reader.peek() != '[') {
                field("descriptors", reader.value());
                return;
            }
            descriptorsValue = null;
            descriptorRefused = null;
            descriptors = null;
            if (!reader.beginArray()) {
                descriptors = List.of();
                return;
            }
            SerializedDescriptor first = null; // most documents hold one: no list until a second
            List<SerializedDescriptor> read = null;
            int firstChars = 0;
            int index = 0;
            do {
                if (descriptorRefused != null) {
                    reader.value(); // the rest is only read as JSON: a malformed document is refused as that first
                } else if (reader.peek() != '{') {
                    descriptorRefused = SerializedDescriptor.notAnObject(reader.value(), index);
                } else {
                    try {
                        int before = reader.remaining();
                        SerializedDescriptor descriptor = SerializedDescriptor.read(reader, index);
                        if (first == null) {
                            first = descriptor;
                            firstChars = before - reader.remaining();
                        } else {
                            if (read == null) {
                                // Sized for the rest of the text in descriptors like the first: a KV-cache block list's
                                // 1,024 fill one array, where growing it by half from a guess left as much again behind.
                                read = new ArrayList<>(2 + reader.remaining() / Math.max(1, firstChars + 1));
                                read.add(first);
                            }
                            read.add(descriptor);
                        }
                    } catch (InvalidMetadataException refused) {
                        descriptorRefused = refused;
                    }
                }
                index++;
            } while (reader.nextElement());
            descriptors = read != null ? Collections.unmodifiableList(read) : first != null ? List.of(first) : List.of();
        }

        RdmaMetadata build() {
            if (unknown != null) {
                throw WireValues.unknownField(unknown, FIELDS);
            }
            if (descriptors == null) {
                if (descriptorsValue == null) {
                    throw new InvalidMetadataException("descriptors", "is required");
                }
                throw new InvalidMetadataException("descriptors", "must be an array, was "
                        + WireValues.describe(descriptorsValue));
            }
            if (descriptorRefused != null) {
                throw descriptorRefused;
            }
            String metadata = WireValues.requireString(required(nixlMetadata, "nixl_metadata"), "nixl_metadata");
            String key = WireValues.requireString(required(notificationKey, "notification_key"), "notification_key");
            long kind = operationKind instanceof Long plain ? plain
                    : WireValues.requireLong(required(operationKind, "operation_kind"), "operation_kind");
            if (kind != OperationKind.READ.value() && kind != OperationKind.WRITE.value()) {
                throw new InvalidMetadataException("operation_kind", "must be 1 (READ) or 2 (WRITE), was " + kind);
            }
            return ofParsed(descriptors, metadata, key, OperationKind.fromValue((int) kind));
        }
    }

    /**
     * An application's Jackson mapper binding a request body: its untyped values (maps, lists, strings, numbers),
     * validated as {@link #fromJson(String)} validates the text.
     */
    @JsonCreator(mode = JsonCreator.Mode.DELEGATING)
    static RdmaMetadata fromTree(@Nullable Object document) {
        if (!(document instanceof Map<?, ?> map)) {
            throw notAnObject(document);
        }
        Fields fields = new Fields();
        for (Map.Entry<?, ?> entry : map.entrySet()) {
            fields.field(String.valueOf(entry.getKey()), entry.getValue());
        }
        return fields.build();
    }

    private static InvalidMetadataException notAnObject(@Nullable Object document) {
        return new InvalidMetadataException("(document)", "must be a JSON object, was " + WireValues.describe(document));
    }

    private static Object required(@Nullable Object value, String field) {
        if (value == null) {
            throw new InvalidMetadataException(field, "is required");
        }
        return value;
    }

    /**
     * Parses a document as a Python Dynamo worker sends it, straight into its values: the whole text is read as JSON
     * before any rule is checked, so a malformed document is refused as that, whatever else it breaks.
     *
     * @throws InvalidMetadataException if it is not JSON or breaks a rule; the message names the field
     */
    public static RdmaMetadata fromJson(String json) {
        if (json == null) {
            throw new InvalidMetadataException("(document)", "is null");
        }
        Fields fields = new Fields();
        try {
            Json.Reader reader = new Json.Reader(json);
            if (reader.peek() != '{') {
                Object document = reader.value();
                reader.end();
                throw notAnObject(document);
            }
            if (reader.beginObject()) {
                do {
                    String name = reader.name();
                    if (name.equals("descriptors")) {
                        fields.descriptors(reader);
                    } else {
                        fields.field(name, reader.value());
                    }
                } while (reader.nextField());
            }
            reader.end();
        } catch (Json.MalformedException e) {
            throw new InvalidMetadataException("(document)", "is not valid JSON: " + e.getMessage(), e);
        }
        return fields.build();
    }

    /** The compact JSON Python Dynamo writes, fields in its order; what an application's Jackson mapper writes too. */
    @JsonValue
    @JsonRawValue
    public String toJson() {
        String metadata = Json.escape(nixlMetadata);
        String key = Json.escape(notificationKey);
        if (descriptors.size() == 1) {
            // Most operations publish one descriptor: one concatenation, which allocates only the result, sized exactly.
            SerializedDescriptor only = descriptors.get(0);
            return "{\"descriptors\":[{\"device\":\"" + Json.escape(only.device()) + "\",\"ptr\":" + only.ptr()
                    + ",\"size\":" + only.size() + "}],\"nixl_metadata\":\"" + metadata + "\",\"notification_key\":\""
                    + key + "\",\"operation_kind\":" + operationKind.value() + "}";
        }
        StringBuilder json = new StringBuilder(96 + 64 * descriptors.size() + metadata.length() + key.length())
                .append("{\"descriptors\":[");
        for (int i = 0; i < descriptors.size(); i++) {
            descriptors.get(i).appendJson(i == 0 ? json : json.append(','));
        }
        return json.append("],\"nixl_metadata\":\"").append(metadata).append("\",\"notification_key\":\"").append(key)
                .append("\",\"operation_kind\":").append(operationKind.value()).append('}').toString();
    }

    public List<SerializedDescriptor> descriptors() {
        return descriptors;
    }

    /** The encoded agent metadata, as it travels ({@code b64:…} or legacy hex). */
    public String nixlMetadata() {
        return nixlMetadata;
    }

    /**
     * The notification the active side sends when done. On the embedded transport it is also the credential for
     * the published memory: whoever holds it can read (or write) the buffers until the operation ends, so it
     * travels only inside this metadata and is never logged; {@link #toString()} shows
     * {@link #notificationKeyFingerprint()} instead.
     */
    public String notificationKey() {
        return notificationKey;
    }

    /** A short, non-secret fingerprint of the notification key, as {@link Operation#notificationKeyFingerprint()}. */
    public String notificationKeyFingerprint() {
        return NotificationKeys.fingerprint(notificationKey);
    }

    public OperationKind operationKind() {
        return operationKind;
    }

    /**
     * The passive agent's metadata, decoded afresh on each call (nothing decoded is kept: a parsed document
     * holds only its text). A connector decodes it under its own {@code maxMetadataSize} instead.
     */
    public byte[] decodeNixlMetadata() {
        return NixlMetadataCodec.decode(nixlMetadata, MAX_NIXL_METADATA_BYTES);
    }

    /** Total bytes over all descriptors. */
    public long totalSize() {
        long total = 0;
        for (SerializedDescriptor descriptor : descriptors) {
            total = Math.addExact(total, descriptor.size());
        }
        return total;
    }

    @Override
    public boolean equals(@Nullable Object other) {
        return other instanceof RdmaMetadata that && descriptors.equals(that.descriptors)
                && nixlMetadata.equals(that.nixlMetadata) && notificationKey.equals(that.notificationKey)
                && operationKind == that.operationKind;
    }

    @Override
    public int hashCode() {
        return Objects.hash(descriptors, nixlMetadata, notificationKey, operationKind);
    }

    @Override
    public String toString() {
        return "RdmaMetadata[kind=" + operationKind + ", descriptors=" + descriptors + ", notificationKeyFingerprint="
                + notificationKeyFingerprint() + ", nixlMetadata=" + nixlMetadata.length() + " chars]";
    }
}
