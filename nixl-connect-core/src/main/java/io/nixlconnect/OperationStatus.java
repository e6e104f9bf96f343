package io.nixlconnect;

/**
 * Life cycle of an operation. The integer values and the string forms ({@code INIT}, {@code PROC},
 * {@code DONE}, {@code STOP}, {@code ERR}) match Python Dynamo's.
 */
public enum OperationStatus {
    UNINITIALIZED(0, "<invalid>"),
    INITIALIZED(1, "INIT"),
    IN_PROGRESS(2, "PROC"),
    COMPLETE(3, "DONE"),
    CANCELLED(4, "STOP"),
    ERRORED(5, "ERR");

    private final int value;
    private final String text;

    OperationStatus(int value, String text) {
        this.value = value;
        this.text = text;
    }

    public int value() {
        return value;
    }

    /** Whether the operation has ended (complete, cancelled or errored). */
    public boolean isTerminal() {
        return this == COMPLETE || this == CANCELLED || this == ERRORED;
    }

    public static OperationStatus fromValue(int value) {
        for (OperationStatus status : values()) {
            if (status.value == value) {
                return status;
            }
        }
        throw new IllegalArgumentException("Unknown OperationStatus value " + value + " (expected 0..5)");
    }

    @Override
    public String toString() {
        return text;
    }
}
