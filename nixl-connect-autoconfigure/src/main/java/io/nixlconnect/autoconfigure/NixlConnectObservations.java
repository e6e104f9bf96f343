package io.nixlconnect.autoconfigure;

import io.micrometer.common.KeyValues;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.nixlconnect.AbstractOperation;
import io.nixlconnect.Connector;
import io.nixlconnect.OperationListener;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Makes each operation a {@code nixl.transfer} {@link Observation} (a span when tracing is on), from its
 * creation to its end. Operations start and end on different threads, so no scope is opened; the parent is
 * whatever observation is current where the operation is created.
 */
public class NixlConnectObservations implements OperationListener, AutoCloseable {

    public static final String OBSERVATION_NAME = "nixl.transfer";

    private final Connector connector;
    private final ObservationRegistry registry;
    private final Map<AbstractOperation, Observation> running = new ConcurrentHashMap<>();

    public NixlConnectObservations(Connector connector, ObservationRegistry registry) {
        this.connector = connector;
        this.registry = registry;
        connector.addListener(this);
    }

    @Override
    public void operationStarted(AbstractOperation operation) {
        Observation observation = Observation.createNotStarted(OBSERVATION_NAME, registry)
                .contextualName("nixl " + NixlOperationTags.kind(operation) + " " + NixlOperationTags.role(operation))
                .lowCardinalityKeyValues(KeyValues.of(
                        NixlOperationTags.KIND, NixlOperationTags.kind(operation),
                        NixlOperationTags.ROLE, NixlOperationTags.role(operation),
                        NixlOperationTags.DEVICE, NixlOperationTags.device(operation)))
                .highCardinalityKeyValues(KeyValues.of(
                        "nixl.notification_key", operation.notificationKey(),
                        "nixl.bytes", Long.toString(operation.totalBytes())))
                .start();
        running.put(operation, observation);
    }

    @Override
    public void operationFinished(AbstractOperation operation) {
        Observation observation = running.remove(operation);
        if (observation == null) {
            return; // created before this listener was added
        }
        observation.lowCardinalityKeyValue(NixlOperationTags.OUTCOME, NixlOperationTags.outcome(operation));
        observation.lowCardinalityKeyValue(NixlOperationTags.BACKEND, NixlOperationTags.backend(operation));
        if (operation.failure() != null) {
            observation.error(operation.failure());
        }
        observation.stop();
    }

    @Override
    public void close() {
        connector.removeListener(this);
    }
}
