package io.nixlconnect;

/**
 * What a passive operation allows its peer to do. The integer values are part of the wire protocol
 * ({@code operation_kind} in {@link RdmaMetadata}).
 */
public enum OperationKind {
    UNSPECIFIED(0, "<invalid>"),
    /** The passive side is readable; the active side reads. */
    READ(1, "READ"),
    /** The passive side is writable; the active side writes. */
    WRITE(2, "WRITE");

    private final int value;
    private final String text;

    OperationKind(int value, String text) {
        this.value = value;
        this.text = text;
    }

    public int value() {
        return value;
    }

    public static OperationKind fromValue(int value) {
        // A switch, not a search of values(): that clones the array on every call (every parsed document).
        return switch (value) {
            case 0 -> UNSPECIFIED;
            case 1 -> READ;
            case 2 -> WRITE;
            default -> throw new IllegalArgumentException("Unknown OperationKind value " + value + " (expected 0, 1 or 2)");
        };
    }

    @Override
    public String toString() {
        return text;
    }
}
