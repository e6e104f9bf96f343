package io.nixlconnect.autoconfigure.observation;

import io.micrometer.observation.Observation;
import io.nixlconnect.AbstractOperation;

/** What a {@link NixlTransferObservationConvention} sees of one operation. */
public class NixlTransferContext extends Observation.Context {

    private final AbstractOperation operation;
    private final String backend;

    public NixlTransferContext(AbstractOperation operation, String backend) {
        this.operation = operation;
        this.backend = backend;
    }

    /** The operation; read its status at the end for the outcome. */
    public AbstractOperation getOperation() {
        return operation;
    }

    /** The connector's backend, {@code embedded} or {@code nixl}. */
    public String getBackend() {
        return backend;
    }
}
