package io.nixlconnect.autoconfigure;

import io.nixlconnect.Operation;
import io.nixlconnect.OperationKind;
import io.nixlconnect.OperationStatus;
import io.nixlconnect.TransferTimeoutException;

/** The tag values metrics and observations share, so both describe an operation the same way. */
final class NixlOperationTags {

    static final String KIND = "kind";
    static final String ROLE = "role";
    static final String DEVICE = "device";
    static final String OUTCOME = "outcome";
    static final String CAUSE = "cause";

    private NixlOperationTags() {
    }

    /** {@code read} or {@code write}: what the passive side allows, the active side does. */
    static String kind(Operation operation) {
        return operation.operationKind() == OperationKind.WRITE ? "write" : "read";
    }

    /** {@code active} (moves the bytes) or {@code passive} (publishes its buffers). */
    static String role(Operation operation) {
        return operation.isPassive() ? "passive" : "active";
    }

    /** {@code cpu} or {@code cuda}: the memory of the local buffers. */
    static String device(Operation operation) {
        return operation.deviceKind().toString();
    }

    /** {@code complete}, {@code cancelled}, {@code timeout} (errored by a timeout) or {@code errored}; {@code running} before the end. */
    static String outcome(Operation operation) {
        OperationStatus status = operation.status();
        return switch (status) {
            case COMPLETE -> "complete";
            case CANCELLED -> "cancelled";
            case ERRORED -> operation.failure() instanceof TransferTimeoutException ? "timeout" : "errored";
            default -> "running";
        };
    }

    /** Simple name of the failure's class; {@code none} when there is no failure recorded. */
    static String cause(Operation operation) {
        Throwable failure = operation.failure();
        return failure == null ? "none" : failure.getClass().getSimpleName();
    }
}
