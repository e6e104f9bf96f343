package io.nixlconnect;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonRawValue;
import com.fasterxml.jackson.annotation.JsonValue;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * One remote buffer as {@link RdmaMetadata} carries it: {@code {"device":"cpu","ptr":4096,"size":16}}.
 * Immutable. The device text is normalised as Python's {@code validate_device} does it — trimmed and
 * lower-cased, nothing more ({@code " CUDA "} becomes {@code cuda}) — so a document re-serialised here reads
 * as Python would re-serialise it; {@link #toDevice()} gives the device it names ({@code cuda} is device 0).
 */
public final class SerializedDescriptor {

    private static final List<String> FIELDS = List.of("device", "ptr", "size");

    private final String deviceText;
    private final Device device;
    private final long ptr;
    private final long size;

    /**
     * @param device {@code cpu}, {@code cuda[:N]} or {@code xpu[:N]} (trimmed, any case)
     * @param ptr    the buffer's address in the passive process; not 0
     * @param size   bytes, {@code >= 0}
     * @throws InvalidMetadataException naming the field that breaks a rule
     */
    public SerializedDescriptor(String device, long ptr, long size) {
        this(device, ptr, size, "", 0);
    }

    /**
     * {@code prefix} and {@code index}: where the descriptor sits, for error messages (see {@link #prefix}); a field
     * name is put together only for a refusal.
     */
    private SerializedDescriptor(String device, long ptr, long size, @Nullable String prefix, int index) {
        this.device = parseDevice(device, prefix, index);
        this.deviceText = device.strip().toLowerCase(Locale.ROOT);
        if (ptr == 0) {
            throw new InvalidMetadataException(prefix(prefix, index) + "ptr", "must not be 0 (null pointer)");
        }
        if (ptr < 0) {
            throw new InvalidMetadataException(prefix(prefix, index) + "ptr", "must be a positive address, was " + ptr);
        }
        if (size < 0) {
            throw new InvalidMetadataException(prefix(prefix, index) + "size", "must be >= 0, was " + size);
        }
        this.ptr = ptr;
        this.size = size;
    }

    /** The prefix of a descriptor's field names: {@code prefix} when not null, else the index in a document's list. */
    private static String prefix(@Nullable String prefix, int index) {
        return prefix != null ? prefix : index == 0 ? "descriptors[0]." : "descriptors[" + index + "].";
    }

    /**
     * One descriptor object's fields as a reader found them, checked by {@link #build} in one order whoever read them
     * ({@link #read} from the text, {@link #fromMap} from a mapper's plain values): an unknown field, a missing one,
     * a wrong type, then the constructor's rules. A repeated field keeps its last value.
     */
    static final class Fields {
        private @Nullable String prefix;
        private int index;
        private @Nullable String unknown;
        private boolean hasDevice;
        private boolean hasPtr;
        private boolean hasSize;
        private @Nullable Object device;
        private @Nullable Object ptr;
        private @Nullable Object size;

        /** Starts the descriptor at {@code index} of a document's list. */
        void start(int index) {
            start(index, null);
        }

        /** Starts a descriptor: located by its index in a document's list, or by {@code prefix} when not null. */
        private void start(int index, @Nullable String prefix) {
            this.index = index;
            this.prefix = prefix;
            unknown = null;
            hasDevice = hasPtr = hasSize = false;
            device = ptr = size = null;
        }

        String prefix() {
            return SerializedDescriptor.prefix(prefix, index);
        }

        private void field(String name, @Nullable Object value) {
            switch (name) {
                case "device" -> {
                    hasDevice = true;
                    device = value;
                }
                case "ptr" -> {
                    hasPtr = true;
                    ptr = value;
                }
                case "size" -> {
                    hasSize = true;
                    size = value;
                }
                default -> {
                    if (unknown == null) {
                        unknown = name;
                    }
                }
            }
        }

        SerializedDescriptor build() {
            if (unknown != null) {
                throw WireValues.unknownField(prefix() + unknown, FIELDS);
            }
            if (!hasDevice) {
                throw new InvalidMetadataException(prefix() + "device", "is required");
            }
            if (!hasPtr) {
                throw new InvalidMetadataException(prefix() + "ptr", "is required");
            }
            if (!hasSize) {
                throw new InvalidMetadataException(prefix() + "size", "is required");
            }
            String deviceText = device instanceof String text ? text : WireValues.requireString(device, prefix() + "device");
            long ptrValue = ptr instanceof Long plain ? plain : WireValues.requireLong(ptr, prefix() + "ptr");
            long sizeValue = size instanceof Long plain ? plain : WireValues.requireLong(size, prefix() + "size");
            return new SerializedDescriptor(deviceText, ptrValue, sizeValue, prefix, index);
        }
    }

    /**
     * Reads the descriptor object at the reader's {@code '{'} straight into a descriptor: the device text is the only
     * value made, ptr and size are read in place. From the first field that is not plain (unknown, of another type, a
     * number {@link Json.Reader#smallInteger()} does not read), or when one is missing, the fields go through
     * {@link Fields}, which words the refusal as for a mapper's values. {@code index} locates it in error messages.
     */
    static SerializedDescriptor read(Json.Reader reader, int index) {
        String device = null;
        long ptr = Json.Reader.NOT_A_SMALL_INTEGER;
        long size = Json.Reader.NOT_A_SMALL_INTEGER;
        Fields other = null;
        if (reader.beginObject()) {
            do {
                String name = reader.name();
                if (other == null) {
                    if (name.equals("device") && reader.peek() == '"') {
                        device = (String) reader.value();
                        continue;
                    }
                    if (name.equals("ptr") && (ptr = reader.smallInteger()) != Json.Reader.NOT_A_SMALL_INTEGER) {
                        continue;
                    }
                    if (name.equals("size") && (size = reader.smallInteger()) != Json.Reader.NOT_A_SMALL_INTEGER) {
                        continue;
                    }
                    other = fieldsSoFar(index, device, ptr, size);
                }
                other.field(name, reader.value());
            } while (reader.nextField());
        }
        if (other == null && device != null && ptr != Json.Reader.NOT_A_SMALL_INTEGER
                && size != Json.Reader.NOT_A_SMALL_INTEGER) {
            return new SerializedDescriptor(device, ptr, size, null, index);
        }
        return (other != null ? other : fieldsSoFar(index, device, ptr, size)).build();
    }

    /** What {@link #read} had read plainly, as {@link Fields}: null and {@code NOT_A_SMALL_INTEGER} are not read. */
    private static Fields fieldsSoFar(int index, @Nullable String device, long ptr, long size) {
        Fields fields = new Fields();
        fields.start(index);
        if (device != null) {
            fields.field("device", device);
        }
        if (ptr != Json.Reader.NOT_A_SMALL_INTEGER) {
            fields.field("ptr", ptr);
        }
        if (size != Json.Reader.NOT_A_SMALL_INTEGER) {
            fields.field("size", size);
        }
        return fields;
    }

    /** An application's Jackson mapper binding one descriptor: its untyped value, validated as inside a document. */
    @JsonCreator(mode = JsonCreator.Mode.DELEGATING)
    static SerializedDescriptor fromTree(@Nullable Object value) {
        return fromMap(value, "");
    }

    /** Reads one descriptor object of a parsed document; {@code fieldPrefix} locates it in error messages. */
    static SerializedDescriptor fromMap(@Nullable Object value, String fieldPrefix) {
        Fields fields = new Fields();
        fields.start(0, fieldPrefix);
        return fromMap(value, fields);
    }

    /** As {@link #fromMap(Object, String)}, located by {@code fields} (started by the caller). */
    static SerializedDescriptor fromMap(@Nullable Object value, Fields fields) {
        if (!(value instanceof Map<?, ?> map)) {
            throw notAnObject(value, fields);
        }
        for (Map.Entry<?, ?> entry : map.entrySet()) {
            fields.field(String.valueOf(entry.getKey()), entry.getValue());
        }
        return fields.build();
    }

    /** The refusal of the element at {@code index} of a descriptor list that is not an object. */
    static InvalidMetadataException notAnObject(@Nullable Object value, int index) {
        Fields at = new Fields();
        at.start(index);
        return notAnObject(value, at);
    }

    private static InvalidMetadataException notAnObject(@Nullable Object value, Fields at) {
        String prefix = at.prefix();
        return new InvalidMetadataException(prefix.isEmpty() ? "descriptor" : prefix.substring(0, prefix.length() - 1),
                "must be an object {device, ptr, size}, was " + WireValues.describe(value));
    }

    /**
     * Python's {@code validate_device} lets through text that starts with {@code cpu}, {@code cuda} or {@code xpu}
     * (so not {@code gpu} or {@code host}, which only its {@code Device} constructor reads); what it names is
     * then read as {@link Device#of} reads it.
     */
    private static Device parseDevice(String device, @Nullable String prefix, int index) {
        if (device == null) {
            throw new InvalidMetadataException(prefix(prefix, index) + "device", "is missing (null)");
        }
        String text = device.strip().toLowerCase(Locale.ROOT);
        if (!text.startsWith("cpu") && !text.startsWith("cuda") && !text.startsWith("xpu")) {
            throw new InvalidMetadataException(prefix(prefix, index) + "device", "must be 'cpu', 'cuda:N' or 'xpu:N', was '" + device + "'");
        }
        try {
            return Device.of(text);
        } catch (IllegalArgumentException e) {
            throw new InvalidMetadataException(prefix(prefix, index) + "device", "must be 'cpu', 'cuda:N' or 'xpu:N', was '" + device
                    + "'", e);
        }
    }

    /** The device text as Python normalises it: trimmed and lower-cased ({@code cpu}, {@code cuda}, {@code cuda:3}). */
    public String device() {
        return deviceText;
    }

    /** The device as an object. */
    public Device toDevice() {
        return device;
    }

    public long ptr() {
        return ptr;
    }

    public long size() {
        return size;
    }

    /** A descriptor of the remote buffer this describes (not registrable locally: it is the peer's memory). */
    public Descriptor toDescriptor() {
        return Descriptor.fromSerialized(this);
    }

    /** {@code {"device":"cpu","ptr":4096,"size":16}}, as inside {@link RdmaMetadata#toJson()}; what a Jackson mapper writes. */
    @JsonValue
    @JsonRawValue
    String toJson() {
        return "{\"device\":\"" + Json.escape(deviceText) + "\",\"ptr\":" + ptr + ",\"size\":" + size + "}";
    }

    /** {@link #toJson()} appended to {@code json}, without a string of its own (a document writes many). */
    void appendJson(StringBuilder json) {
        json.append("{\"device\":\"").append(Json.escape(deviceText)).append("\",\"ptr\":").append(ptr)
                .append(",\"size\":").append(size).append('}');
    }

    @Override
    public boolean equals(@Nullable Object other) {
        return other instanceof SerializedDescriptor that && deviceText.equals(that.deviceText) && ptr == that.ptr
                && size == that.size;
    }

    @Override
    public int hashCode() {
        return Objects.hash(deviceText, ptr, size);
    }

    @Override
    public String toString() {
        return "SerializedDescriptor[device=" + device + ", ptr=" + ptr + ", size=" + size + "]";
    }
}
