package io.nixlconnect.autoconfigure.observation;

import io.nixlconnect.Operation;
import io.nixlconnect.OperationKind;
import io.nixlconnect.OperationStatus;
import io.nixlconnect.TransferTimeoutException;

/** Tag values of an operation, shared by the observation convention and the bytes counter. */
final class NixlOperationTags {

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

    /** {@code cpu}, {@code cuda} or {@code xpu}: the memory of the local buffers. */
    static String device(Operation operation) {
        return operation.deviceKind().toString();
    }

    /** Whether the operation has reached a terminal status (and so has an outcome). */
    static boolean ended(Operation operation) {
        OperationStatus status = operation.status();
        return status == OperationStatus.COMPLETE || status == OperationStatus.CANCELLED
                || status == OperationStatus.ERRORED;
    }

    /** How the bytes moved ({@link Operation#transferPath()}); {@code none} when none moved. */
    static String path(Operation operation) {
        String path = operation.transferPath();
        return path == null ? "none" : path;
    }

    /** {@code complete}, {@code cancelled}, {@code timeout} (errored by a timeout) or {@code errored}. */
    static String outcome(Operation operation) {
        return switch (operation.status()) {
            case COMPLETE -> "complete";
            case CANCELLED -> "cancelled";
            case ERRORED -> operation.failure() instanceof TransferTimeoutException ? "timeout" : "errored";
            default -> "running";
        };
    }

    /**
     * What moved the bytes, once the operation has ended: the plugin NIXL chose (e.g. {@code UCX}) or {@code tcp} on
     * the embedded transport; {@code none} where the transport did not say (passive operations).
     */
    static String plugin(Operation operation) {
        String backend = operation.attributes().backend();
        return backend == null ? "none" : backend;
    }
}
