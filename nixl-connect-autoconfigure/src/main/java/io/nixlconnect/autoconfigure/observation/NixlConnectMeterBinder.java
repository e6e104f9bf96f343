package io.nixlconnect.autoconfigure.observation;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.nixlconnect.Connector;
import io.nixlconnect.DeviceKind;
import io.nixlconnect.Operation;
import io.nixlconnect.OperationKind;
import io.nixlconnect.OperationListener;
import io.nixlconnect.OperationStatus;
import io.nixlconnect.PeerStatistics;
import io.nixlconnect.autoconfigure.observation.NixlTransferObservationDocumentation.LowCardinalityKeyNames;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.ToLongFunction;

/**
 * The meters of connectors that are not timings (those come from the {@code nixl.transfer} observation):
 * gauges and the peer counters ({@link Connector#peerStatistics()}) read from each connector when scraped, and
 * {@code nixl.transfer.bytes}, whose counters are all
 * registered in {@link #bindTo} so that an operation's end only increments one. Built from the application's
 * {@code Connector} beans, each connector's meters carry the tag {@code name} with its bean name (as Boot tags a
 * DataSource's), so that several connectors have a series each; built from one connector alone, no such tag. See
 * docs/observability.md.
 */
public class NixlConnectMeterBinder implements MeterBinder, AutoCloseable {

    public static final String TRANSFER_BYTES = "nixl.transfer.bytes";
    public static final String OPERATIONS_ACTIVE = "nixl.operations.active";
    public static final String MEMORY_REGISTERED = "nixl.memory.registered";
    public static final String REMOTE_AGENTS = "nixl.remote.agents";
    public static final String CONNECTIONS_OPEN = "nixl.connections.open";
    public static final String PEERS_EVICTED = "nixl.peers.evicted";
    public static final String PEERS_RECONNECTED = "nixl.peers.reconnected";
    public static final String PEERS_DEPARTED = "nixl.peers.departed";
    public static final String CONNECTIONS_IDLE_CLOSED = "nixl.connections.idle.closed";
    /** The tag naming a connector by its bean name. */
    public static final String NAME_TAG = "name";

    private static final OperationKind[] KINDS = {OperationKind.READ, OperationKind.WRITE};
    private static final DeviceKind[] DEVICES = {DeviceKind.HOST, DeviceKind.CUDA};

    private final List<ConnectorMeters> connectors;

    /** The meters of one connector, untagged. */
    public NixlConnectMeterBinder(Connector connector) {
        this.connectors = List.of(new ConnectorMeters(connector, Tags.empty()));
    }

    /** The meters of each connector, tagged {@code name=<key>} (the bean name). */
    public NixlConnectMeterBinder(Map<String, Connector> connectorsByName) {
        List<ConnectorMeters> meters = new ArrayList<>();
        connectorsByName.forEach((name, connector) -> meters.add(new ConnectorMeters(connector, Tags.of(NAME_TAG, name))));
        this.connectors = List.copyOf(meters);
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        for (ConnectorMeters meters : connectors) {
            meters.bindTo(registry);
        }
    }

    private static int index(OperationKind kind, boolean active, DeviceKind device) {
        return ((kind == OperationKind.WRITE ? 1 : 0) * 2 + (active ? 1 : 0)) * DEVICES.length
                + (device == DeviceKind.CUDA ? 1 : 0);
    }

    @Override
    public void close() {
        for (ConnectorMeters meters : connectors) {
            meters.connector.removeListener(meters);
        }
    }

    /** One connector's meters, in every registry bound. */
    private static final class ConnectorMeters implements OperationListener {

        private final Connector connector;
        private final Tags tags;
        /** Per registry bound: bytes counters indexed by {@link #index}. */
        private final List<Counter[]> bytesCounters = new CopyOnWriteArrayList<>();

        ConnectorMeters(Connector connector, Tags tags) {
            this.connector = connector;
            this.tags = tags;
            connector.addListener(this);
        }

        void bindTo(MeterRegistry registry) {
            Gauge.builder(OPERATIONS_ACTIVE, connector, Connector::inFlightOperations)
                    .description("nixl-connect operations created and not yet ended")
                    .tags(tags)
                    .register(registry);
            Gauge.builder(MEMORY_REGISTERED, connector, Connector::registeredBytes)
                    .description("Local memory registered with the transport")
                    .baseUnit("bytes")
                    .tags(tags)
                    .register(registry);
            Gauge.builder(REMOTE_AGENTS, connector, Connector::remoteAgentCount)
                    .description("Peer agents currently loaded")
                    .tags(tags)
                    .register(registry);
            Gauge.builder(CONNECTIONS_OPEN, connector, c -> c.peerStatistics().openConnections())
                    .description("Connections open to or from peers now")
                    .tags(tags)
                    .register(registry);
            peerCounter(registry, PEERS_EVICTED, "Cached peers evicted because the peer cache was full",
                    PeerStatistics::evictions);
            peerCounter(registry, PEERS_RECONNECTED, "Peers whose connection failed and was made anew",
                    PeerStatistics::reconnects);
            peerCounter(registry, PEERS_DEPARTED, "Connections or peers closed because the peer left or died",
                    PeerStatistics::departedPeersClosed);
            peerCounter(registry, CONNECTIONS_IDLE_CLOSED, "Connections closed after idling past the idle limit",
                    PeerStatistics::idleConnectionsClosed);
            Counter[] counters = new Counter[KINDS.length * 2 * DEVICES.length];
            for (OperationKind kind : KINDS) {
                for (boolean active : new boolean[] {true, false}) {
                    for (DeviceKind device : DEVICES) {
                        counters[index(kind, active, device)] = Counter.builder(TRANSFER_BYTES)
                                .description("Bytes moved by completed operations (each side counts its own)")
                                .baseUnit("bytes")
                                .tags(tags)
                                .tag(LowCardinalityKeyNames.KIND.asString(), kind == OperationKind.WRITE ? "write" : "read")
                                .tag(LowCardinalityKeyNames.ROLE.asString(), active ? "active" : "passive")
                                .tag(LowCardinalityKeyNames.DEVICE.asString(), device.toString())
                                .register(registry);
                    }
                }
            }
            bytesCounters.add(counters);
        }

        private void peerCounter(MeterRegistry registry, String name, String description,
                ToLongFunction<PeerStatistics> count) {
            FunctionCounter.builder(name, connector, c -> count.applyAsLong(c.peerStatistics()))
                    .description(description)
                    .tags(tags)
                    .register(registry);
        }

        @Override
        public void operationFinished(Operation operation) {
            if (operation.status() != OperationStatus.COMPLETE || operation.deviceKind() == DeviceKind.UNSPECIFIED) {
                return;
            }
            int index = index(operation.operationKind(), !operation.isPassive(), operation.deviceKind());
            for (Counter[] counters : bytesCounters) {
                counters[index].increment(operation.totalBytes());
            }
        }
    }
}
