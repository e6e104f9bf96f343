package io.nixlconnect;

import java.util.Locale;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Where memory lives: the host ({@code cpu}), one CUDA device ({@code cuda:N}) or one Intel GPU ({@code xpu:N}).
 *
 * <p>Parsing follows Python Dynamo's {@code Device(str)}: the text is trimmed and lower-cased; {@code cuda} or
 * {@code gpu} names a CUDA device, {@code xpu} an Intel GPU, {@code cpu} or {@code host} the host; an id follows
 * after {@code :} and defaults to 0; the host's id is always 0 ({@code cpu:0} is the host). Where Python reads
 * junk after the name as device 0 ({@code cudax}, {@code cuda:1:2}), this refuses it — see docs/interop.md.
 */
public final class Device {

    /** The host. */
    public static final Device CPU = new Device(DeviceKind.HOST, 0);

    private static final String EXPECTED = "expected cpu, host, cuda, cuda:N, gpu, gpu:N, xpu or xpu:N";

    private final DeviceKind kind;
    private final int id;

    /** A device of the given kind; {@code id} is the GPU ordinal and must be 0 for the host. */
    public Device(DeviceKind kind, int id) {
        if (kind == null || kind == DeviceKind.UNSPECIFIED) {
            throw new IllegalArgumentException("Device kind must be HOST, CUDA or XPU, was " + kind);
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

    /** Parses {@code cpu}, {@code host}, {@code cuda[:N]}, {@code gpu[:N]} or {@code xpu[:N]}. */
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

    /** The Intel GPU (XPU) with the given ordinal. */
    public static Device xpu(int id) {
        return new Device(DeviceKind.XPU, id);
    }

    private static Device parse(String device) {
        if (device == null) {
            throw new IllegalArgumentException("Device must not be null");
        }
        if (device.equals("cpu")) {
            return CPU; // what nearly every descriptor names: no normalising, no search
        }
        String text = device.strip().toLowerCase(Locale.ROOT);
        String[] names = {"cuda", "gpu", "xpu", "cpu", "host"};
        DeviceKind[] kinds = {DeviceKind.CUDA, DeviceKind.CUDA, DeviceKind.XPU, DeviceKind.HOST, DeviceKind.HOST};
        for (int i = 0; i < names.length; i++) {
            if (text.startsWith(names[i])) {
                int id = parseId(device, text.substring(names[i].length()));
                // Python sets the host's id to 0 whatever follows the colon; so do we, once it is a number.
                return kinds[i] == DeviceKind.HOST ? CPU : new Device(kinds[i], id);
            }
        }
        throw new IllegalArgumentException("Unknown device '" + device + "': " + EXPECTED);
    }

    /** The id after the name: none (0) or {@code :N}, N a decimal number as Python's {@code int()} reads it. */
    private static int parseId(String device, String rest) {
        if (rest.isEmpty()) {
            return 0;
        }
        if (rest.charAt(0) != ':') {
            throw new IllegalArgumentException("Unknown device '" + device + "': " + EXPECTED);
        }
        String number = rest.substring(1).trim();
        if (number.startsWith("+")) {
            number = number.substring(1);
        }
        if (number.isEmpty() || number.length() > 9) {
            throw new IllegalArgumentException(
                    "Unknown device '" + device + "': the device id must be a non-negative integer");
        }
        for (int i = 0; i < number.length(); i++) {
            char c = number.charAt(i);
            if (c < '0' || c > '9') {
                throw new IllegalArgumentException(
                        "Unknown device '" + device + "': the device id must be a non-negative integer");
            }
        }
        return Integer.parseInt(number);
    }

    public DeviceKind kind() {
        return kind;
    }

    /** GPU ordinal; 0 for the host. */
    public int id() {
        return id;
    }

    public boolean isCuda() {
        return kind == DeviceKind.CUDA;
    }

    /** Whether this is GPU memory of any kind (CUDA or XPU): not readable from Java directly. */
    public boolean isGpu() {
        return kind == DeviceKind.CUDA || kind == DeviceKind.XPU;
    }

    /** {@code cpu}, {@code cuda:N} or {@code xpu:N}: the form Python's {@code str(Device)} writes. */
    @Override
    public String toString() {
        return kind == DeviceKind.HOST ? "cpu" : kind + ":" + id;
    }

    @Override
    public boolean equals(@Nullable Object other) {
        return other instanceof Device that && kind == that.kind && id == that.id;
    }

    @Override
    public int hashCode() {
        return Objects.hash(kind, id);
    }
}
