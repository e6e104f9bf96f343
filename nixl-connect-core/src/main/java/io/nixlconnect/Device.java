package io.nixlconnect;

import java.util.Locale;
import java.util.Objects;

/**
 * Where memory lives: the host ({@code cpu}) or one CUDA device ({@code cuda:N}).
 *
 * <p>Parsing accepts what Python Dynamo accepts: {@code cpu}, {@code host}, {@code cuda},
 * {@code cuda:N}, {@code gpu}, {@code gpu:N}, trimmed and case-insensitive; {@code cuda} alone is device 0.
 */
public final class Device {

    /** The host. */
    public static final Device CPU = new Device(DeviceKind.HOST, 0);

    private final DeviceKind kind;
    private final int id;

    /** A device of the given kind; {@code id} is the CUDA ordinal and must be 0 for the host. */
    public Device(DeviceKind kind, int id) {
        if (kind == null || kind == DeviceKind.UNSPECIFIED) {
            throw new IllegalArgumentException("Device kind must be HOST or CUDA, was " + kind);
        }
        if (id < 0) {
            throw new IllegalArgumentException("Device id must be >= 0, was " + id);
        }
        if (kind == DeviceKind.HOST && id != 0) {
            throw new IllegalArgumentException("A host device has no id, was " + id);
        }
        this.kind = kind;
        this.id = id;
    }

    /** Parses {@code cpu}, {@code host}, {@code cuda[:N]} or {@code gpu[:N]}. */
    public Device(String device) {
        this(parse(device));
    }

    private Device(Device parsed) {
        this.kind = parsed.kind;
        this.id = parsed.id;
    }

    /** Parses a device string; the same as {@link #Device(String)}. */
    public static Device of(String device) {
        return parse(device);
    }

    /** The CUDA device with the given ordinal. */
    public static Device cuda(int id) {
        return new Device(DeviceKind.CUDA, id);
    }

    private static Device parse(String device) {
        if (device == null) {
            throw new IllegalArgumentException("Device must not be null");
        }
        String text = device.trim().toLowerCase(Locale.ROOT);
        if (text.equals("cpu") || text.equals("host")) {
            return CPU;
        }
        String prefix = text.startsWith("cuda") ? "cuda" : text.startsWith("gpu") ? "gpu" : null;
        if (prefix == null) {
            throw new IllegalArgumentException(
                    "Unknown device '" + device + "': expected cpu, host, cuda, cuda:N, gpu or gpu:N");
        }
        String rest = text.substring(prefix.length());
        if (rest.isEmpty()) {
            return new Device(DeviceKind.CUDA, 0);
        }
        if (rest.charAt(0) != ':' || rest.length() == 1 || rest.length() > 6) {
            throw new IllegalArgumentException(
                    "Unknown device '" + device + "': expected cpu, host, cuda, cuda:N, gpu or gpu:N");
        }
        for (int i = 1; i < rest.length(); i++) {
            if (!Character.isDigit(rest.charAt(i)) || rest.charAt(i) > '9') {
                throw new IllegalArgumentException(
                        "Unknown device '" + device + "': the device id must be a non-negative integer");
            }
        }
        return new Device(DeviceKind.CUDA, Integer.parseInt(rest.substring(1)));
    }

    public DeviceKind kind() {
        return kind;
    }

    /** CUDA ordinal; 0 for the host. */
    public int id() {
        return id;
    }

    public boolean isCuda() {
        return kind == DeviceKind.CUDA;
    }

    /** {@code cpu} or {@code cuda:N}: the form {@link SerializedDescriptor} carries. */
    @Override
    public String toString() {
        return kind == DeviceKind.HOST ? "cpu" : "cuda:" + id;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof Device that && kind == that.kind && id == that.id;
    }

    @Override
    public int hashCode() {
        return Objects.hash(kind, id);
    }
}
