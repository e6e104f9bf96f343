package io.nixlconnect.autoconfigure.observation;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.nixlconnect.Connector;
import io.nixlconnect.Operation;
import io.nixlconnect.OperationListener;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Makes each operation of a connector a {@code nixl.transfer} {@link Observation}
 * ({@link NixlTransferObservationDocumentation#TRANSFER}) from its creation to its end. Operations start and end
 * on different threads, so no scope is opened; the parent is whatever observation is current where the
 * operation is created. Registers itself as the connector's listener; {@link #close()} unregisters.
 */
public class NixlTransferObservations implements OperationListener, AutoCloseable {

    private static final NixlTransferObservationConvention DEFAULT_CONVENTION =
            new DefaultNixlTransferObservationConvention();

    private final Connector connector;
    private final ObservationRegistry registry;
    private final NixlTransferObservationConvention customConvention;
    private final Map<Operation, Observation> running = new ConcurrentHashMap<>();

    /** @param customConvention replaces the default convention; {@code null} for the default */
    public NixlTransferObservations(Connector connector, ObservationRegistry registry,
            NixlTransferObservationConvention customConvention) {
        this.connector = connector;
        this.registry = registry;
        this.customConvention = customConvention;
        connector.addListener(this);
    }

    @Override
    public void operationStarted(Operation operation) {
        if (registry.isNoop()) {
            return;
        }
        String backend = connector.backendName();
        Observation observation = NixlTransferObservationDocumentation.TRANSFER
                .observation(customConvention, DEFAULT_CONVENTION, () -> new NixlTransferContext(operation, backend),
                        registry)
                .start();
        running.put(operation, observation);
    }

    @Override
    public void operationFinished(Operation operation) {
        Observation observation = running.remove(operation);
        if (observation == null) {
            return; // created before this listener was added, or while the registry was a no-op
        }
        if (operation.failure() != null) {
            observation.error(operation.failure());
        }
        observation.stop(); // the convention adds the outcome now
    }

    @Override
    public void close() {
        connector.removeListener(this);
    }
}
