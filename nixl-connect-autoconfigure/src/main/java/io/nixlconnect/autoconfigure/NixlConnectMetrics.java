package io.nixlconnect.autoconfigure;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.nixlconnect.Connector;
import io.nixlconnect.Operation;
import io.nixlconnect.OperationListener;
import io.nixlconnect.OperationStatus;

/**
 * Micrometer meters of one connector (see docs/observability.md): gauges read the connector when scraped;
 * counters and the timer are updated as operations finish. Registers itself as the connector's listener
 * and unregisters on {@link #close()}.
 */
public class NixlConnectMetrics implements OperationListener, AutoCloseable {

    public static final String TRANSFER_BYTES = "nixl.transfer.bytes";
    public static final String OPERATIONS = "nixl.operations";
    public static final String OPERATION_DURATION = "nixl.operation.duration";
    public static final String OPERATIONS_ACTIVE = "nixl.operations.active";
    public static final String MEMORY_REGISTERED = "nixl.memory.registered";
    public static final String REMOTE_AGENTS = "nixl.remote.agents";
    public static final String ERRORS = "nixl.errors";

    private final Connector connector;
    private final MeterRegistry registry;

    public NixlConnectMetrics(Connector connector, MeterRegistry registry) {
        this.connector = connector;
        this.registry = registry;
        Gauge.builder(OPERATIONS_ACTIVE, connector, Connector::inFlightOperations)
                .description("nixl-connect operations created and not yet ended")
                .register(registry);
        Gauge.builder(MEMORY_REGISTERED, connector, Connector::registeredBytes)
                .description("Local memory registered with the transport")
                .baseUnit("bytes")
                .register(registry);
        Gauge.builder(REMOTE_AGENTS, connector, Connector::remoteAgentCount)
                .description("Peer agents currently loaded")
                .register(registry);
        connector.addListener(this);
    }

    @Override
    public void operationFinished(Operation operation) {
        Tags tags = Tags.of(NixlOperationTags.KIND, NixlOperationTags.kind(operation),
                NixlOperationTags.ROLE, NixlOperationTags.role(operation),
                NixlOperationTags.DEVICE, NixlOperationTags.device(operation));
        Tags withOutcome = tags.and(NixlOperationTags.OUTCOME, NixlOperationTags.outcome(operation));
        Counter.builder(OPERATIONS)
                .description("nixl-connect operations ended")
                .tags(withOutcome)
                .register(registry)
                .increment();
        Timer.builder(OPERATION_DURATION)
                .description("Time from an operation's creation to its end")
                .tags(withOutcome)
                .register(registry)
                .record(operation.duration());
        if (operation.status() == OperationStatus.COMPLETE) {
            Counter.builder(TRANSFER_BYTES)
                    .description("Bytes moved by completed operations")
                    .baseUnit("bytes")
                    .tags(tags)
                    .register(registry)
                    .increment(operation.totalBytes());
        } else if (operation.status() == OperationStatus.ERRORED) {
            Counter.builder(ERRORS)
                    .description("nixl-connect operations that ended with an error")
                    .tags(tags.and(NixlOperationTags.CAUSE, NixlOperationTags.cause(operation)))
                    .register(registry)
                    .increment();
        }
    }

    @Override
    public void close() {
        connector.removeListener(this);
    }
}
