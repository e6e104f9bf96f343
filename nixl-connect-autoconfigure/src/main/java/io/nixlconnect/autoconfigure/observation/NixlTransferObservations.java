package io.nixlconnect.autoconfigure.observation;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.nixlconnect.Connector;
import io.nixlconnect.Operation;
import io.nixlconnect.OperationListener;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Makes each operation of one connector, or of several named ones, a {@code nixl.transfer} {@link Observation}
 * ({@link NixlTransferObservationDocumentation#TRANSFER}) from its creation to its end. Operations start and end
 * on different threads, so no scope is opened; the parent is whatever observation is current where the
 * operation is created. Registers itself as each connector's listener; {@link #close()} unregisters. Connectors
 * given by name (their bean names) get the {@code name} key ({@link NixlTransferObservationDocumentation.LowCardinalityKeyNames#NAME}).
 */
public class NixlTransferObservations implements OperationListener, AutoCloseable {

    private static final NixlTransferObservationConvention DEFAULT_CONVENTION =
            new DefaultNixlTransferObservationConvention();

    /** Each observed connector, and its bean name ({@code null}: observed without one). */
    private final Map<Connector, String> names = new IdentityHashMap<>();
    private final ObservationRegistry registry;
    private final NixlTransferObservationConvention customConvention;
    private final Map<Operation, Observation> running = new ConcurrentHashMap<>();

    /** @param customConvention replaces the default convention; {@code null} for the default */
    public NixlTransferObservations(Connector connector, ObservationRegistry registry,
            NixlTransferObservationConvention customConvention) {
        this.registry = registry;
        this.customConvention = customConvention;
        names.put(connector, null);
        connector.addListener(this);
    }

    /**
     * @param connectorsByName the connectors to observe, by bean name
     * @param customConvention replaces the default convention; {@code null} for the default
     */
    public NixlTransferObservations(Map<String, Connector> connectorsByName, ObservationRegistry registry,
            NixlTransferObservationConvention customConvention) {
        this.registry = registry;
        this.customConvention = customConvention;
        connectorsByName.forEach((name, connector) -> names.put(connector, name));
        names.keySet().forEach(connector -> connector.addListener(this));
    }

    @Override
    public void operationStarted(Operation operation) {
        if (registry.isNoop()) {
            return;
        }
        Connector connector = operation.connector();
        String backend = connector.backendName();
        String name = names.get(connector);
        Observation observation = NixlTransferObservationDocumentation.TRANSFER
                .observation(customConvention, DEFAULT_CONVENTION,
                        () -> new NixlTransferContext(operation, backend, name), registry)
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
        names.keySet().forEach(connector -> connector.removeListener(this));
    }
}
