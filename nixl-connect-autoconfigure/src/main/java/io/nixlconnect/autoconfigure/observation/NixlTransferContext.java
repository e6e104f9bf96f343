package io.nixlconnect.autoconfigure.observation;

import io.micrometer.observation.Observation;
import io.nixlconnect.Operation;

/** What a {@link NixlTransferObservationConvention} sees of one operation. */
public class NixlTransferContext extends Observation.Context {

    private final Operation operation;
    private final String backend;

    public NixlTransferContext(Operation operation, String backend) {
        this.operation = operation;
        this.backend = backend;
    }

    /** The operation; read its status at the end for the outcome. */
    public Operation getOperation() {
        return operation;
    }

    /** The connector's backend, {@code embedded} or {@code nixl}. */
    public String getBackend() {
        return backend;
    }
}
