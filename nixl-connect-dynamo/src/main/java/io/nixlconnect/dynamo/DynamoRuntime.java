package io.nixlconnect.dynamo;

import io.nixlconnect.dynamo.internal.Counters;
import io.nixlconnect.dynamo.internal.Listeners;
import io.nixlconnect.dynamo.internal.Threads;
import io.nixlconnect.dynamo.internal.WriteWatchdog;
import io.nixlconnect.dynamo.internal.client.CallHomeServer;
import io.nixlconnect.dynamo.internal.client.DynamoClientImpl;
import io.nixlconnect.dynamo.internal.client.RequestPlaneClient;
import io.nixlconnect.dynamo.internal.discovery.Discovery;
import io.nixlconnect.dynamo.internal.discovery.EtcdDiscovery;
import io.nixlconnect.dynamo.internal.discovery.FileDiscovery;
import io.nixlconnect.dynamo.internal.discovery.InstanceRecord;
import io.nixlconnect.dynamo.internal.server.RequestPlaneServer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ScheduledExecutorService;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This process as a member of a Dynamo deployment (Python's {@code DistributedRuntime}): it finds endpoints through
 * Dynamo's discovery and calls them ({@link #client}), and serves its own ({@link #serve}). Speaks Dynamo
 * {@value #SUPPORTED_VERSION}: file and etcd discovery, the TCP request plane, JSON and msgpack payloads.
 *
 * <pre>{@code
 * try (DynamoRuntime runtime = DynamoRuntime.start(DynamoSettings.fromEnvironment())) {
 *     DynamoClient encoder = runtime.client("demo.encoder.generate");
 *     encoder.waitForInstances(Duration.ofSeconds(30));
 *     try (ResponseStream replies = encoder.call(Map.of("request", 1))) {
 *         for (DynamoResponse reply : replies) {
 *             EncodeReply encoded = EncodeReply.fromValue(reply.data());
 *             connector.read(encoded.nixlReadableMetadata(), descriptor);
 *         }
 *     }
 * }
 * }</pre>
 *
 * <p>Thread-safe. Closing deregisters every served endpoint first (callers stop routing here), then waits up to
 * {@link DynamoSettings#shutdownGrace()} for requests in flight, then closes clients, listeners and discovery (an etcd
 * lease is revoked). Close it before the {@code Connector} its handlers use, so that requests in flight can finish
 * their transfers.
 */
public final class DynamoRuntime implements AutoCloseable {

    /** The Dynamo version whose protocol this runtime speaks. */
    public static final String SUPPORTED_VERSION = "1.6.x";

    private static final Logger LOG = LoggerFactory.getLogger(DynamoRuntime.class);

    private final DynamoSettings settings;
    private final Counters counters = new Counters();
    private final Listeners listeners = new Listeners();
    private final WriteWatchdog watchdog = new WriteWatchdog();
    private final ExecutorService executor = Threads.cached("dynamo-runtime");
    private final ScheduledExecutorService scheduler = Threads.scheduler("dynamo-timer");
    private final Discovery discovery;
    private final List<DynamoClientImpl> clients = new CopyOnWriteArrayList<>();
    private final List<ServedEndpointImpl> served = new CopyOnWriteArrayList<>();
    private @Nullable RequestPlaneClient requests;
    private @Nullable CallHomeServer callHome;
    private @Nullable RequestPlaneServer server;
    private volatile boolean closed;

    private DynamoRuntime(DynamoSettings settings) {
        this.settings = settings;
        this.discovery = settings.discoveryBackend() == DiscoveryBackend.FILE
                ? new FileDiscovery(settings.fileKvDirectory(), settings.fileKvTtl(), counters)
                : new EtcdDiscovery(settings.etcdEndpoints(), settings.etcdLeaseTtl(), settings.etcdRequestTimeout(),
                        counters);
    }

    /** A runtime with these settings. Nothing is contacted or bound until a client or an endpoint is made. */
    public static DynamoRuntime start(DynamoSettings settings) {
        if (settings == null) {
            throw new IllegalArgumentException("settings must not be null");
        }
        return new DynamoRuntime(settings);
    }

    /** A runtime with {@link DynamoSettings#fromEnvironment()}. */
    public static DynamoRuntime fromEnvironment() {
        return start(DynamoSettings.fromEnvironment());
    }

    public DynamoSettings settings() {
        return settings;
    }

    /** What this runtime has done and refused so far. */
    public DynamoCounters counters() {
        return counters.snapshot();
    }

    /** Tells {@code listener} of each call and served request that ends, from now on. */
    public void addListener(DynamoListener listener) {
        if (listener == null) {
            throw new IllegalArgumentException("listener must not be null");
        }
        listeners.add(listener);
    }

    public void removeListener(DynamoListener listener) {
        listeners.remove(listener);
    }

    /** Whether discovery answered (and, with etcd, the lease was alive) when last used. */
    public boolean isDiscoveryHealthy() {
        return discovery.healthy();
    }

    /** The endpoints this runtime serves now. */
    public List<ServedEndpoint> servedEndpoints() {
        return List.copyOf(served);
    }

    private void requireOpen() {
        if (closed) {
            throw new IllegalStateException("this DynamoRuntime is closed");
        }
    }

    /** A round-robin client of {@code ns.comp.ep}. */
    public DynamoClient client(String endpoint) {
        return client(EndpointId.parse(endpoint), RouterMode.ROUND_ROBIN);
    }

    /**
     * A client of the endpoint, following its instances in discovery until it (or this runtime) is closed.
     *
     * @throws DynamoDiscoveryException if discovery cannot be read
     * @throws DynamoException          if the call-home listener cannot be bound
     */
    public DynamoClient client(EndpointId endpoint, RouterMode mode) {
        requireOpen();
        CallHomeServer home;
        RequestPlaneClient plane;
        synchronized (this) {
            requireOpen();
            if (callHome == null) {
                callHome = new CallHomeServer(settings, counters, executor, scheduler,
                        advertised(settings.responseStreamHost()));
                requests = new RequestPlaneClient(settings, counters, scheduler);
            }
            home = callHome;
            plane = requests;
        }
        DynamoClientImpl[] holder = new DynamoClientImpl[1];
        DynamoClientImpl client = new DynamoClientImpl(endpoint, mode, settings, counters, listeners, plane, home, executor,
                discovery, () -> clients.remove(holder[0]));
        holder[0] = client;
        clients.add(client);
        return client;
    }

    /** Serves {@code ns.comp.ep} with the handler. */
    public ServedEndpoint serve(String endpoint, DynamoHandler handler) {
        return serve(EndpointId.parse(endpoint), handler);
    }

    /**
     * Serves the endpoint: binds the request-plane listener (once per runtime), registers the endpoint in discovery
     * and keeps the registration alive until the returned handle (or this runtime) is closed.
     *
     * @throws IllegalStateException    if this runtime serves the endpoint already
     * @throws DynamoDiscoveryException if it cannot be registered
     */
    public ServedEndpoint serve(EndpointId endpoint, DynamoHandler handler) {
        if (handler == null) {
            throw new IllegalArgumentException("handler must not be null");
        }
        RequestPlaneServer plane;
        synchronized (this) {
            requireOpen();
            if (server == null) {
                server = new RequestPlaneServer(settings, counters, listeners, executor, watchdog);
                discovery.onInstanceIdChange(server::acceptInstanceId);
            }
            plane = server;
        }
        long id = discovery.instanceId();
        plane.acceptInstanceId(id);
        RequestPlaneServer.Endpoint state = plane.add(endpoint, handler);
        String host = advertised(settings.rpcHost());
        int port = plane.port();
        Discovery.Registration registration;
        try {
            registration = discovery.register(endpoint, instanceId -> new DynamoInstance(endpoint, instanceId, host,
                    port, InstanceRecord.subject(endpoint, instanceId), settings.servedCodec(), "cpu"));
        } catch (RuntimeException e) {
            plane.drain(state, 0);
            throw e;
        }
        ServedEndpointImpl handle = new ServedEndpointImpl(endpoint, id, state, registration, plane);
        served.add(handle);
        LOG.info("serving {} as instance {} on {}:{} ({} discovery)", endpoint, Long.toHexString(id), host, port,
                settings.discoveryBackend().wireName());
        return handle;
    }

    /** The address to advertise for a bind address: this host's own for a wildcard. */
    private static String advertised(String host) {
        return host.equals("0.0.0.0") || host.equals("::") || host.equals("[::]") ? DynamoSettings.defaultHost() : host;
    }

    private final class ServedEndpointImpl implements ServedEndpoint {
        private final EndpointId endpoint;
        private final long instanceId;
        private final RequestPlaneServer.Endpoint state;
        private final Discovery.Registration registration;
        private final RequestPlaneServer plane;
        private volatile boolean registered = true;

        ServedEndpointImpl(EndpointId endpoint, long instanceId, RequestPlaneServer.Endpoint state,
                Discovery.Registration registration, RequestPlaneServer plane) {
            this.endpoint = endpoint;
            this.instanceId = instanceId;
            this.state = state;
            this.registration = registration;
            this.plane = plane;
        }

        @Override
        public EndpointId endpoint() {
            return endpoint;
        }

        @Override
        public long instanceId() {
            return instanceId;
        }

        @Override
        public int inFlight() {
            return state.inFlight();
        }

        @Override
        public boolean isRegistered() {
            return registered;
        }

        void deregister() {
            if (registered) {
                registered = false;
                registration.close();
            }
        }

        @Override
        public void close() {
            deregister();
            plane.drain(state, settings.shutdownGrace().toMillis());
            served.remove(this);
        }

        @Override
        public String toString() {
            return "ServedEndpoint[" + endpoint + ", instance " + Long.toHexString(instanceId) + "]";
        }
    }

    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        // 1. Out of discovery first: callers stop routing here while what is in flight finishes.
        for (ServedEndpointImpl endpoint : served) {
            try {
                endpoint.deregister();
            } catch (RuntimeException e) {
                LOG.warn("deregistering {} failed", endpoint.endpoint(), e);
            }
        }
        // 2. Drain and stop serving.
        RequestPlaneServer plane = server;
        if (plane != null) {
            plane.close(settings.shutdownGrace().toMillis());
        }
        served.clear();
        // 3. Clients and the call-home listener.
        for (DynamoClientImpl client : new ArrayList<>(clients)) {
            client.close();
        }
        CallHomeServer home = callHome;
        if (home != null) {
            home.close();
        }
        RequestPlaneClient plane2 = requests;
        if (plane2 != null) {
            plane2.close();
        }
        // 4. Discovery (revokes the etcd lease), then the threads.
        discovery.close();
        scheduler.shutdownNow();
        executor.shutdownNow();
        watchdog.close();
    }

    @Override
    public String toString() {
        return "DynamoRuntime[" + settings + "]";
    }
}
