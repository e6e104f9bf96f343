package io.nixlconnect;

import com.fasterxml.jackson.annotation.JsonAnySetter;
import com.fasterxml.jackson.annotation.JsonAutoDetect;
import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * One remote buffer as {@link RdmaMetadata} carries it: {@code {"device":"cpu","ptr":4096,"size":16}}.
 * Immutable. The device is normalised ({@code " CUDA "} becomes {@code cuda:0}).
 */
@JsonPropertyOrder({"device", "ptr", "size"})
@JsonIgnoreProperties(ignoreUnknown = false)
@JsonAutoDetect(getterVisibility = JsonAutoDetect.Visibility.NONE,
        isGetterVisibility = JsonAutoDetect.Visibility.NONE, fieldVisibility = JsonAutoDetect.Visibility.NONE)
public final class SerializedDescriptor {

    private static final Set<String> FIELDS = Set.of("device", "ptr", "size");

    private final Device device;
    private final long ptr;
    private final long size;

    /**
     * @param device {@code cpu} or {@code cuda[:N]} (trimmed, any case)
     * @param ptr    the buffer's address in the passive process; not 0
     * @param size   bytes, {@code >= 0}
     * @throws InvalidMetadataException naming the field that breaks a rule
     */
    public SerializedDescriptor(String device, long ptr, long size) {
        this(device, ptr, size, "");
    }

    SerializedDescriptor(String device, long ptr, long size, String fieldPrefix) {
        this.device = parseDevice(device, fieldPrefix + "device");
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

    @JsonCreator
    static SerializedDescriptor fromJson(@JsonProperty("device") Object device, @JsonProperty("ptr") Object ptr,
            @JsonProperty("size") Object size) {
        return new SerializedDescriptor(WireValues.requireString(device, "device"),
                WireValues.requireLong(ptr, "ptr"), WireValues.requireLong(size, "size"), "");
    }

    /**
     * Refuses unknown fields whatever the mapper's configuration: {@code @JsonIgnoreProperties(ignoreUnknown = false)}
     * alone defers to {@code FAIL_ON_UNKNOWN_PROPERTIES}, which Jackson 3 turns off by default.
     */
    @JsonAnySetter
    void refuseUnknownField(String name, Object value) {
        throw new InvalidMetadataException(name, "is not allowed (unknown field; expected only " + FIELDS + ")");
    }

    /** Reads one descriptor object of a parsed document; {@code fieldPrefix} locates it in error messages. */
    static SerializedDescriptor fromMap(Object value, String fieldPrefix) {
        if (!(value instanceof Map<?, ?> map)) {
            throw new InvalidMetadataException(fieldPrefix.isEmpty() ? "descriptor" : fieldPrefix.substring(0, fieldPrefix.length() - 1),
                    "must be an object {device, ptr, size}, was " + WireValues.describe(value));
        }
        WireValues.refuseUnknownFields(map, FIELDS, fieldPrefix);
        for (String name : new String[] {"device", "ptr", "size"}) {
            if (!map.containsKey(name)) {
                throw new InvalidMetadataException(fieldPrefix + name, "is required");
            }
        }
        return new SerializedDescriptor(WireValues.requireString(map.get("device"), fieldPrefix + "device"),
                WireValues.requireLong(map.get("ptr"), fieldPrefix + "ptr"),
                WireValues.requireLong(map.get("size"), fieldPrefix + "size"), fieldPrefix);
    }

    private static Device parseDevice(String device, String field) {
        if (device == null) {
            throw new InvalidMetadataException(field, "is missing (null)");
        }
        String text = device.trim().toLowerCase(Locale.ROOT);
        if (!text.equals("cpu") && !text.startsWith("cuda")) {
            throw new InvalidMetadataException(field, "must be 'cpu' or 'cuda:N', was '" + device + "'");
        }
        try {
            return Device.of(text);
        } catch (IllegalArgumentException e) {
            throw new InvalidMetadataException(field, "must be 'cpu' or 'cuda:N', was '" + device + "'", e);
        }
    }

    /** The device, normalised: {@code cpu} or {@code cuda:N}. */
    @JsonProperty("device")
    public String device() {
        return device.toString();
    }

    /** The device as an object. */
    public Device toDevice() {
        return device;
    }

    @JsonProperty("ptr")
    public long ptr() {
        return ptr;
    }

    @JsonProperty("size")
    public long size() {
        return size;
    }

    /** A descriptor of the remote buffer this describes (not registrable locally: it is the peer's memory). */
    public Descriptor toDescriptor() {
        return Descriptor.fromSerialized(this);
    }

    Map<String, Object> toMap() {
        Map<String, Object> map = new LinkedHashMap<>();
        map.put("device", device());
        map.put("ptr", ptr);
        map.put("size", size);
        return map;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof SerializedDescriptor that && device.equals(that.device) && ptr == that.ptr
                && size == that.size;
    }

    @Override
    public int hashCode() {
        return Objects.hash(device, ptr, size);
    }

    @Override
    public String toString() {
        return "SerializedDescriptor[device=" + device + ", ptr=" + ptr + ", size=" + size + "]";
    }
}
