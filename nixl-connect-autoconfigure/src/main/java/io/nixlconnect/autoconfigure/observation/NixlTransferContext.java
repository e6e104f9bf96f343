package io.nixlconnect.autoconfigure.observation;

import io.micrometer.observation.Observation;
import io.nixlconnect.Operation;

/** What a {@link NixlTransferObservationConvention} sees of one operation. */
public class NixlTransferContext extends Observation.Context {

    private final Operation operation;
    private final String backend;
    private final String connectorName;

    public NixlTransferContext(Operation operation, String backend) {
        this(operation, backend, null);
    }

    /** @param connectorName the connector's bean name; {@code null} when it has none (no {@code name} tag) */
    public NixlTransferContext(Operation operation, String backend, String connectorName) {
        this.operation = operation;
        this.backend = backend;
        this.connectorName = connectorName;
    }

    /** The operation; read its status at the end for the outcome. */
    public Operation getOperation() {
        return operation;
    }

    /** The connector's backend, {@code embedded} or {@code nixl}. */
    public String getBackend() {
        return backend;
    }

    /** The bean name of the operation's connector, or {@code null} for a connector observed without one. */
    public String getConnectorName() {
        return connectorName;
    }
}
