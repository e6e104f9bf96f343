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
        this(device, ptr, size, "");
    }

    SerializedDescriptor(String device, long ptr, long size, String fieldPrefix) {
        this.device = parseDevice(device, fieldPrefix);
        this.deviceText = device.strip().toLowerCase(Locale.ROOT);
        if (ptr == 0) {
            throw new InvalidMetadataException(fieldPrefix + "ptr", "must not be 0 (null pointer)");
        }
        if (ptr < 0) {
            throw new InvalidMetadataException(fieldPrefix + "ptr", "must be a positive address, was " + ptr);
        }
        if (size < 0) {
            throw new InvalidMetadataException(fieldPrefix + "size", "must be >= 0, was " + size);
        }
        this.ptr = ptr;
        this.size = size;
    }

    /** An application's Jackson mapper binding one descriptor: its untyped value, validated as inside a document. */
    @JsonCreator(mode = JsonCreator.Mode.DELEGATING)
    static SerializedDescriptor fromTree(@Nullable Object value) {
        return fromMap(value, "");
    }

    /** Reads one descriptor object of a parsed document; {@code fieldPrefix} locates it in error messages. */
    static SerializedDescriptor fromMap(@Nullable Object value, String fieldPrefix) {
        if (!(value instanceof Map<?, ?> map)) {
            throw new InvalidMetadataException(fieldPrefix.isEmpty() ? "descriptor" : fieldPrefix.substring(0, fieldPrefix.length() - 1),
                    "must be an object {device, ptr, size}, was " + WireValues.describe(value));
        }
        WireValues.refuseUnknownFields(map, FIELDS, fieldPrefix);
        Object device = required(map, "device", fieldPrefix);
        Object ptr = required(map, "ptr", fieldPrefix);
        Object size = required(map, "size", fieldPrefix);
        return new SerializedDescriptor(device instanceof String text ? text
                : WireValues.requireString(device, fieldPrefix + "device"), longValue(ptr, fieldPrefix, "ptr"),
                longValue(size, fieldPrefix, "size"), fieldPrefix);
    }

    private static Object required(Map<?, ?> map, String name, String fieldPrefix) {
        Object value = map.get(name);
        if (value == null && !map.containsKey(name)) {
            throw new InvalidMetadataException(fieldPrefix + name, "is required");
        }
        return value;
    }

    /** The field's name is put together only when the value is not a plain long (most are). */
    private static long longValue(@Nullable Object value, String fieldPrefix, String name) {
        return value instanceof Long plain ? plain : WireValues.requireLong(value, fieldPrefix + name);
    }

    /**
     * Python's {@code validate_device} lets through text that starts with {@code cpu}, {@code cuda} or {@code xpu}
     * (so not {@code gpu} or {@code host}, which only its {@code Device} constructor reads); what it names is
     * then read as {@link Device#of} reads it.
     */
    private static Device parseDevice(String device, String fieldPrefix) {
        String field = fieldPrefix + "device"; // cheap: the usual prefix is empty, or a refusal follows
        if (device == null) {
            throw new InvalidMetadataException(field, "is missing (null)");
        }
        String text = device.strip().toLowerCase(Locale.ROOT);
        if (!text.startsWith("cpu") && !text.startsWith("cuda") && !text.startsWith("xpu")) {
            throw new InvalidMetadataException(field, "must be 'cpu', 'cuda:N' or 'xpu:N', was '" + device + "'");
        }
        try {
            return Device.of(text);
        } catch (IllegalArgumentException e) {
            throw new InvalidMetadataException(field, "must be 'cpu', 'cuda:N' or 'xpu:N', was '" + device + "'", e);
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
