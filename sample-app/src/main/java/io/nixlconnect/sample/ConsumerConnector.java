package io.nixlconnect.sample;

import io.micrometer.core.instrument.MeterRegistry;
import io.nixlconnect.Connector;
import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.autoconfigure.observation.NixlConnectMeterBinder;
import io.nixlconnect.transport.TransportSettings;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The connector the consumer transfers with. In role {@code consumer} it is the application's {@link Connector}
 * bean. In role {@code both} it is a second connector of the consumer's own, on the same backend with the same
 * settings under the worker id {@code <producer's id>-consumer}: NIXL refuses a connector's own metadata as a peer's
 * (one agent does not read from itself), so in one process too the consumer must be another worker, as it is in two.
 * Its meters join the application's (tag {@code name=demoConsumer}), so {@code nixl.transfer.bytes{role=active}}
 * counts its transfers.
 */
public final class ConsumerConnector implements AutoCloseable {

    /** The {@code name} tag of the own connector's meters. */
    static final String METER_NAME = "demoConsumer";

    private final Connector connector;
    private final @Nullable NixlConnectMeterBinder meters;

    private ConsumerConnector(Connector connector, @Nullable NixlConnectMeterBinder meters) {
        this.connector = connector;
        this.meters = meters;
    }

    /** The application's connector (role consumer): not closed by {@link #close()}. */
    public static ConsumerConnector shared(Connector connector) {
        return new ConsumerConnector(connector, null);
    }

    /**
     * A connector of its own beside {@code producer} (role both), bound to {@code registry} when there is one; closed
     * by {@link #close()}.
     */
    public static ConsumerConnector beside(Connector producer, @Nullable MeterRegistry registry) {
        Connector own = new Connector(ownOptions(producer));
        NixlConnectMeterBinder meters = new NixlConnectMeterBinder(Map.of(METER_NAME, own));
        if (registry != null) {
            meters.bindTo(registry);
        }
        return new ConsumerConnector(own, meters);
    }

    /**
     * The producer's options under a worker id of its own, with only the backend the producer opened (so both are
     * on the same one) and, for the embedded transport, a free port (the producer's may be fixed).
     */
    static ConnectorOptions ownOptions(Connector producer) {
        TransportSettings backend = producer.options().transports().stream()
                .filter(settings -> settings.name().equals(producer.backendName()))
                .findFirst()
                .orElseThrow(() -> new IllegalStateException("Connector '" + producer.name()
                        + "' lists no settings for its own backend " + producer.backendName()));
        if (backend instanceof EmbeddedSettings embedded) {
            backend = embedded.withPort(0);
        }
        return producer.options().toBuilder()
                .workerId(producer.name() + "-consumer")
                .transports(backend)
                .build();
    }

    public Connector connector() {
        return connector;
    }

    /** Whether this is a connector of its own (role both) rather than the application's. */
    public boolean ownsConnector() {
        return meters != null;
    }

    /** Closes the own connector (cancelling what is still in flight); leaves the application's alone. */
    @Override
    public void close() {
        if (meters != null) {
            meters.close();
            connector.close();
        }
    }
}
