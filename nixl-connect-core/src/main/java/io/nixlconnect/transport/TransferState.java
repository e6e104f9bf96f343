package io.nixlconnect.transport;

/** State of a posted transfer. */
public enum TransferState {
    IN_PROGRESS,
    DONE,
    ERROR,
    CANCELLED;

    public boolean isTerminal() {
        return this != IN_PROGRESS;
    }
}
