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
import org.jspecify.annotations.Nullable;

/**
 * One remote buffer as {@link RdmaMetadata} carries it: {@code {"device":"cpu","ptr":4096,"size":16}}.
 * Immutable. The device text is normalised as Python's {@code validate_device} does it — trimmed and
 * lower-cased, nothing more ({@code " CUDA "} becomes {@code cuda}) — so a document re-serialised here reads
 * as Python would re-serialise it; {@link #toDevice()} gives the device it names ({@code cuda} is device 0).
 */
@JsonPropertyOrder({"device", "ptr", "size"})
@JsonIgnoreProperties(ignoreUnknown = false)
@JsonAutoDetect(getterVisibility = JsonAutoDetect.Visibility.NONE,
        isGetterVisibility = JsonAutoDetect.Visibility.NONE, fieldVisibility = JsonAutoDetect.Visibility.NONE)
public final class SerializedDescriptor {

    private static final Set<String> FIELDS = Set.of("device", "ptr", "size");

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
        this.device = parseDevice(device, fieldPrefix + "device");
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

    /**
     * Python's {@code validate_device} lets through text that starts with {@code cpu}, {@code cuda} or {@code xpu}
     * (so not {@code gpu} or {@code host}, which only its {@code Device} constructor reads); what it names is
     * then read as {@link Device#of} reads it.
     */
    private static Device parseDevice(String device, String field) {
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
    @JsonProperty("device")
    public String device() {
        return deviceText;
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
