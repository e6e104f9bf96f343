package io.nixlconnect.autoconfigure;

import io.nixlconnect.AbstractOperation;
import io.nixlconnect.ActiveOperation;
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
    static final String BACKEND = "backend";

    private NixlOperationTags() {
    }

    /** {@code read} or {@code write}: what the passive side allows, the active side does. */
    static String kind(AbstractOperation operation) {
        return operation.operationKind() == OperationKind.WRITE ? "write" : "read";
    }

    /** {@code active} (moves the bytes) or {@code passive} (publishes its buffers). */
    static String role(AbstractOperation operation) {
        return operation instanceof ActiveOperation ? "active" : "passive";
    }

    /** {@code cpu} or {@code cuda}: the memory of the local buffers. */
    static String device(AbstractOperation operation) {
        return operation.deviceKind().toString();
    }

    /** {@code complete}, {@code cancelled}, {@code timeout} (errored by a timeout) or {@code errored}; {@code running} before the end. */
    static String outcome(AbstractOperation operation) {
        OperationStatus status = operation.status();
        return switch (status) {
            case COMPLETE -> "complete";
            case CANCELLED -> "cancelled";
            case ERRORED -> operation.failure() instanceof TransferTimeoutException ? "timeout" : "errored";
            default -> "running";
        };
    }

    /**
     * What moved the bytes, once the operation has ended: the NIXL plugin NIXL chose (e.g. {@code UCX}) or
     * {@code tcp} on the embedded transport; {@code none} where the transport did not say (passive operations).
     */
    static String backend(AbstractOperation operation) {
        Object backend = operation.attributes().get("backend");
        return backend == null ? "none" : backend.toString();
    }

    /** Simple name of the failure's class; {@code none} when there is no failure recorded. */
    static String cause(AbstractOperation operation) {
        Throwable failure = operation.failure();
        return failure == null ? "none" : failure.getClass().getSimpleName();
    }
}
