package io.nixlconnect.transport;

/** Direction of a one-sided transfer, seen from the active side. */
public enum TransferOp {
    /** Pull the remote regions' bytes into the local regions. */
    READ,
    /** Push the local regions' bytes into the remote regions. */
    WRITE
}
