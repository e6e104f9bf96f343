package io.nixlconnect;

/** Kind of memory a descriptor points into. The integer values are part of the wire protocol. */
public enum DeviceKind {
    UNSPECIFIED(0, "<invalid>"),
    /** Host memory; prints {@code cpu}. */
    HOST(1, "cpu"),
    /** CUDA device memory; prints {@code cuda}. */
    CUDA(2, "cuda"),
    /**
     * Intel GPU (XPU) device memory; prints {@code xpu}. Only the NIXL backend moves it (NIXL registers it as
     * VRAM, as Python Dynamo does); the embedded transport refuses it.
     */
    XPU(3, "xpu");

    private final int value;
    private final String text;

    DeviceKind(int value, String text) {
        this.value = value;
        this.text = text;
    }

    /** The protocol's integer value. */
    public int value() {
        return value;
    }

    /** The kind with the given protocol value. */
    public static DeviceKind fromValue(int value) {
        for (DeviceKind kind : values()) {
            if (kind.value == value) {
                return kind;
            }
        }
        throw new IllegalArgumentException("Unknown DeviceKind value " + value + " (expected 0, 1, 2 or 3)");
    }

    @Override
    public String toString() {
        return text;
    }
}
