package io.nixlconnect;

import io.nixlconnect.transport.PeerCounts;
import io.nixlconnect.transport.Transport;
import io.nixlconnect.transport.TransportAgent;
import io.nixlconnect.transport.TransportException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Entry point: creates passive operations that publish local buffers ({@link #createReadable},
 * {@link #createWritable}) and active operations that move bytes to or from a peer's published buffers
 * ({@link #beginRead}, {@link #beginWrite}).
 *
 * <p>A connector opens the first usable transport of its {@link ConnectorOptions#transports() preference list} and
 * owns one agent on it (its {@link Connection}), created at construction and reused for every operation; memory
 * registrations and loaded peers are cached and released deterministically. Thread-safe. Closing it cancels what
 * is in flight and releases everything.
 *
 * <pre>{@code
 * try (Connector connector = new Connector("producer");
 *      Descriptor tensor = new Descriptor(bytes);
 *      ReadableOperation readable = connector.createReadable(tensor)) {
 *     send(readable.metadata().toJson());   // to the peer, by any means
 *     readable.waitForCompletion();          // returns once the peer has read it
 * }
 * }</pre>
 */
public final class Connector implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(Connector.class);
    private static final AtomicInteger SCHEDULER_IDS = new AtomicInteger();

    private final ConnectorOptions options;
    private final String workerId;
    private final Transport transport;
    private final Connection defaultConnection;
    private final Set<Connection> connections = ConcurrentHashMap.newKeySet();
    /** Operations in flight: counted against the limit, told to listeners, waited for by shutdown, cancelled by close. */
    private final InFlightOperations inFlight;
    private final ScheduledThreadPoolExecutor scheduler;
    private final Deadlines deadlines;
    private volatile boolean accepting = true;
    private volatile boolean closed;

    /** A connector with a random worker id and default options. */
    public Connector() {
        this(ConnectorOptions.builder().build());
    }

    /** A connector named {@code workerId} ({@code null}: a new UUID without dashes) with default options. */
    public Connector(@Nullable String workerId) {
        this(ConnectorOptions.builder().workerId(workerId).build());
    }

    /** A connector with the given options; starts its transport agent. */
    public Connector(ConnectorOptions options) {
        if (options == null) {
            throw new IllegalArgumentException("options must not be null");
        }
        this.options = options;
        this.inFlight = new InFlightOperations(options.maxInFlightOperations());
        this.workerId = options.workerId() != null ? options.workerId() : UUID.randomUUID().toString().replace("-", "");
        int id = SCHEDULER_IDS.incrementAndGet();
        this.scheduler = new ScheduledThreadPoolExecutor(1, runnable -> {
            Thread thread = new Thread(runnable, "nixl-connect-timer-" + id);
            thread.setDaemon(true);
            return thread;
        });
        scheduler.setRemoveOnCancelPolicy(true);
        this.deadlines = new Deadlines(scheduler);
        Transport opened = null;
        try {
            opened = Transports.open(options.transports());
            this.transport = opened;
            this.defaultConnection = new Connection(this, 1);
            connections.add(defaultConnection);
            defaultConnection.initialize();
        } catch (RuntimeException e) {
            if (opened != null) {
                opened.close();
            }
            scheduler.shutdownNow();
            if (e instanceof TransportException failed && opened != null) {
                throw TransportFailureException.of(opened.name(), "create its agent", failed);
            }
            throw e;
        }
        log.info("nixl-connect connector '{}' started on the {} transport", workerId, transport.name());
    }

    /** The worker id. */
    public String name() {
        return workerId;
    }

    /**
     * The name of this worker's host, as Python's {@code Connector.hostname} ({@code socket.gethostname()}) gives it:
     * the kernel's host name ({@code /proc/sys/kernel/hostname}), else what {@code InetAddress} resolves as local
     * host name. Read once, at first use.
     */
    public String hostname() {
        return Hostname.VALUE;
    }

    /**
     * Whether CUDA devices can be used here (Python: {@code Connector.is_cuda_available}): the driver works and
     * some device lets this process use it, as {@link io.nixlconnect.cuda.Cuda#isAvailable()} says. Unlike
     * Python 1.6.1, never fails where CuPy is missing (there it raises {@code NameError}).
     */
    public boolean isCudaAvailable() {
        return io.nixlconnect.cuda.Cuda.isAvailable();
    }

    /**
     * Whether {@code other} is a connector of the same worker, that is with the same worker id: Python's
     * {@code Connector.__eq__}. {@code equals} stays identity, so that two connectors (two agents, two sets of
     * registrations) are never confused in a set or map.
     */
    public boolean sameWorker(Connector other) {
        return other != null && workerId.equals(other.workerId);
    }

    /** The options this connector was built with. */
    public ConnectorOptions options() {
        return options;
    }

    /** The transport in use: {@code embedded} or {@code nixl} (the {@link io.nixlconnect.transport.TransportSettings#name() name} of the settings that opened). */
    public String backendName() {
        return transport.name();
    }

    /** The connection every operation of this connector uses. */
    Connection connection() {
        return defaultConnection;
    }

    /** Publishes local buffers for a peer to read; send the operation's {@link ReadableOperation#metadata()} to it. */
    public ReadableOperation createReadable(Descriptor... localDescriptors) {
        return createReadable(asList(localDescriptors));
    }

    public ReadableOperation createReadable(List<Descriptor> localDescriptors) {
        return (ReadableOperation) register(READABLE, localDescriptors, null, 1);
    }

    /**
     * Publishes local buffers for {@code readers} peers to read (fan-out): every reader gets the same
     * {@link ReadableOperation#metadata()} and reads with an ordinary {@link #beginRead}; the operation completes,
     * and releases its registrations, once all of them have. {@link ReadableOperation#readsCompleted()} counts them.
     *
     * @throws IllegalArgumentException if {@code readers < 1}
     */
    public ReadableOperation createReadable(int readers, Descriptor... localDescriptors) {
        return createReadable(readers, asList(localDescriptors));
    }

    public ReadableOperation createReadable(int readers, List<Descriptor> localDescriptors) {
        if (readers < 1) {
            throw new IllegalArgumentException("Argument `readers` must be at least 1, was " + readers + ".");
        }
        return (ReadableOperation) register(READABLE, localDescriptors, null, readers);
    }

    /** Publishes local buffers for a peer to write into. */
    public WritableOperation createWritable(Descriptor... localDescriptors) {
        return createWritable(asList(localDescriptors));
    }

    public WritableOperation createWritable(List<Descriptor> localDescriptors) {
        return (WritableOperation) register(WRITABLE, localDescriptors, null, 1);
    }

    /** Starts reading a peer's readable buffers into local ones (same count, pairwise same sizes). */
    public ReadOperation beginRead(RdmaMetadata remoteMetadata, Descriptor... localDescriptors) {
        return beginRead(remoteMetadata, asList(localDescriptors));
    }

    public ReadOperation beginRead(RdmaMetadata remoteMetadata, List<Descriptor> localDescriptors) {
        ReadOperation operation = (ReadOperation) register(READ, localDescriptors, remoteMetadata, 1);
        startActive(operation);
        return operation;
    }

    /** Starts writing local buffers into a peer's writable buffers (same count, pairwise same sizes). */
    public WriteOperation beginWrite(List<Descriptor> localDescriptors, RdmaMetadata remoteMetadata) {
        WriteOperation operation = (WriteOperation) register(WRITE, localDescriptors, remoteMetadata, 1);
        startActive(operation);
        return operation;
    }

    public WriteOperation beginWrite(Descriptor localDescriptor, RdmaMetadata remoteMetadata) {
        return beginWrite(asList(new Descriptor[] {localDescriptor}), remoteMetadata);
    }

    /** Immutable when it can be (the operation then keeps it instead of copying it); nulls are left to its checks. */
    private static List<Descriptor> asList(Descriptor[] descriptors) {
        if (descriptors == null) {
            return null;
        }
        for (Descriptor descriptor : descriptors) {
            if (descriptor == null) {
                return Arrays.asList(descriptors);
            }
        }
        return List.of(descriptors);
    }

    /**
     * Reads a peer's readable buffers into local ones (same count, pairwise same sizes) and returns once the bytes
     * are in place: {@link #beginRead} and {@link ReadOperation#waitForCompletion()} in one call, bounded by the
     * operation timeout. Because the caller waits, its thread does the transport's work (the embedded transport runs
     * a small transfer there, NIXL's transfer is polled there) without waking a transport thread and being woken by
     * it. Python's connector has no blocking read; this is Java's, as {@code HttpClient.send} is beside
     * {@code sendAsync}.
     *
     * @throws TransferException if the read fails, is cancelled, times out ({@link TransferTimeoutException}), or the
     *                           thread is interrupted (the read is then cancelled); thrown from this thread, with the
     *                           exception of the thread where the read ended as its cause
     */
    public void read(RdmaMetadata remoteMetadata, Descriptor... localDescriptors) {
        read(remoteMetadata, asList(localDescriptors));
    }

    public void read(RdmaMetadata remoteMetadata, List<Descriptor> localDescriptors) {
        ((ActiveOperation) register(READ, localDescriptors, remoteMetadata, 1)).runOnCallersThread();
    }

    /**
     * Writes local buffers into a peer's writable buffers (same count, pairwise same sizes) and returns once the bytes
     * have landed: {@link #beginWrite} and {@link WriteOperation#waitForCompletion()} in one call, as {@link #read}.
     *
     * @throws TransferException as {@link #read}
     */
    public void write(List<Descriptor> localDescriptors, RdmaMetadata remoteMetadata) {
        ((ActiveOperation) register(WRITE, localDescriptors, remoteMetadata, 1)).runOnCallersThread();
    }

    public void write(Descriptor localDescriptor, RdmaMetadata remoteMetadata) {
        write(asList(new Descriptor[] {localDescriptor}), remoteMetadata);
    }

    /**
     * Introduces a peer before its first operation, as a service does when it discovers a new worker: the transport
     * loads the peer from {@code peerMetadata} (any metadata the peer published: only its agent part is used, its
     * window is not touched) and gets ready to reach it (NIXL creates the endpoint and starts UCX's wire-up, which
     * then completes in the background; the embedded transport opens a pooled connection), so that the first operation
     * to that peer does not pay for connecting. Waits at most the operation timeout.
     *
     * @throws InvalidMetadataException   if the agent metadata is larger than the connector takes or malformed
     * @throws TransportFailureException  if the transport cannot use the metadata (another backend's), or the peer
     *                                    cannot be reached, or not within the operation timeout
     * @throws ConnectorClosedException   if this connector is closed or shutting down
     */
    public void introducePeer(RdmaMetadata peerMetadata) {
        CompletableFuture<Void> introduced = introducePeerAsync(peerMetadata);
        try {
            introduced.get(options.operationTimeout().toNanos(), TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
            throw e.getCause() instanceof NixlConnectException failure ? failure
                    : new TransportFailureException(transport.name(), "Introducing a peer failed: " + e.getCause(),
                            e.getCause());
        } catch (TimeoutException e) {
            throw new TransportFailureException(transport.name(), "The " + transport.name() + " transport did not"
                    + " reach the introduced peer within the operation timeout (" + options.operationTimeout() + ")",
                    e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TransportFailureException(transport.name(), "Interrupted while introducing a peer", e);
        }
    }

    /**
     * {@link #introducePeer} without waiting: the future completes once the transport is ready for the peer (see
     * there), or exceptionally with a {@link TransportFailureException}.
     *
     * @throws InvalidMetadataException  at once, if the agent metadata is larger than the connector takes or malformed
     * @throws TransportFailureException at once, if the transport cannot use the metadata (another backend's)
     * @throws ConnectorClosedException  if this connector is closed or shutting down
     */
    public CompletableFuture<Void> introducePeerAsync(RdmaMetadata peerMetadata) {
        if (peerMetadata == null) {
            throw new IllegalArgumentException("peer metadata must not be null");
        }
        if (!accepting) {
            throw new ConnectorClosedException("Connector '" + workerId + "' is " + (closed ? "closed" : "shutting down")
                    + "; no peers are introduced");
        }
        byte[] agentMetadata = defaultConnection.peerMetadata(peerMetadata.nixlMetadata());
        CompletableFuture<String> introduced;
        try {
            introduced = defaultConnection.introduce(agentMetadata);
        } catch (TransportException e) {
            throw TransportFailureException.of(transport.name(), "introduce a peer", e);
        }
        return introduced.handle((name, failure) -> {
            if (failure == null) {
                return null;
            }
            Throwable cause = failure instanceof CompletionException && failure.getCause() != null
                    ? failure.getCause() : failure;
            throw cause instanceof TransportException refused
                    ? TransportFailureException.of(transport.name(), "introduce a peer", refused)
                    : new CompletionException(cause);
        });
    }

    private void startActive(ActiveOperation operation) {
        operation.start(false);
    }

    // What register creates.
    private static final int READABLE = 0;
    private static final int WRITABLE = 1;
    private static final int READ = 2;
    private static final int WRITE = 3;

    /** Counts the operation in flight (refusing it when closing or over the limit), then creates it. */
    private AbstractOperation register(int what, List<Descriptor> localDescriptors, RdmaMetadata remoteMetadata,
            int readers) {
        if (!accepting) {
            throw new ConnectorClosedException("Connector '" + workerId + "' is " + (closed ? "closed" : "shutting down")
                    + "; no new operations are accepted");
        }
        inFlight.reserve();
        AbstractOperation operation;
        try {
            operation = switch (what) {
                case READABLE -> new ReadableOperation(this, localDescriptors, readers);
                case WRITABLE -> new WritableOperation(this, localDescriptors);
                case READ -> new ReadOperation(this, remoteMetadata, localDescriptors);
                default -> new WriteOperation(this, localDescriptors, remoteMetadata);
            };
        } catch (RuntimeException | Error e) {
            inFlight.unreserve();
            throw e;
        }
        inFlight.track(operation);
        if (!accepting) {
            operation.close(); // raced with close(): nothing may outlive the connector
        }
        return operation;
    }

    /** Called exactly once per operation when it reaches a terminal status. */
    void operationEnded(AbstractOperation operation) {
        inFlight.ended(operation);
    }

    /** Tells {@code listener} of every operation this connector starts and ends from now on. */
    public void addListener(OperationListener listener) {
        inFlight.addListener(listener);
    }

    /** Stops telling {@code listener}; unknown listeners are ignored. */
    public void removeListener(OperationListener listener) {
        inFlight.removeListener(listener);
    }

    /** Operations created and not yet ended. */
    public int inFlightOperations() {
        return inFlight.count();
    }

    /** Bytes of local memory registered with the transport, over all connections. */
    public long registeredBytes() {
        long total = 0;
        for (Connection connection : connections) {
            total += connection.registeredBytes();
        }
        return total;
    }

    /** Peers loaded, over all connections. */
    public int remoteAgentCount() {
        int total = 0;
        for (Connection connection : connections) {
            total += connection.remoteAgentCount();
        }
        return total;
    }

    /**
     * How the transport holds its peers: cached peers and open connections now, and evictions, reconnects, departed
     * peers and idle connections closed since this connector started. Cheap enough for every health check and scrape;
     * all zero once closed.
     */
    public PeerStatistics peerStatistics() {
        PeerCounts counts = closed ? null : defaultConnection.peerCounts();
        if (counts == null) {
            return PeerStatistics.NONE;
        }
        return new PeerStatistics(remoteAgentCount(), counts.openConnections(), counts.evicted(), counts.reconnected(),
                counts.departed(), counts.idleClosed());
    }

    /** Whether the transport is up and serving peers. */
    public boolean isServing() {
        return !closed && defaultConnection.isServing();
    }

    /** Whether {@link #close()} has begun. */
    boolean isClosed() {
        return closed;
    }

    /** Whether new operations are accepted (false once shutdown or close has begun). */
    public boolean isAccepting() {
        return accepting;
    }

    /** The transport's state for health reports: backend, agent, whether it serves, endpoint, backend details. */
    public TransportStatus transportStatus() {
        boolean open = !closed;
        TransportAgent agent = open ? defaultConnection.agent() : null;
        return new TransportStatus(transport.name(), defaultConnection.name(), isServing(),
                agent == null ? null : agent.endpoint(), agent == null ? Map.of() : agent.details());
    }

    /** Operation time limits, on this connector's timer thread. */
    Deadlines deadlines() {
        return deadlines;
    }

    TransportAgent createAgent(Connection connection) {
        if (closed) {
            throw new ConnectorClosedException("Connector '" + workerId + "' is closed");
        }
        if (connection != defaultConnection && defaultConnection != null) {
            connections.add(connection);
        }
        return transport.createAgent(connection.name());
    }

    void connectionClosed(Connection connection) {
        if (connection != defaultConnection) {
            connections.remove(connection);
        }
    }

    /**
     * Stops accepting operations, gives those in flight up to {@code grace} to end, then {@link #close()}s.
     *
     * @return whether every operation ended within the grace period
     */
    public boolean shutdown(Duration grace) {
        accepting = false;
        List<CompletableFuture<Void>> pending = new ArrayList<>();
        for (AbstractOperation operation : inFlight.snapshot()) {
            pending.add(operation.completion().exceptionally(error -> null));
        }
        boolean drained = true;
        try {
            CompletableFuture.allOf(pending.toArray(CompletableFuture[]::new)).get(grace.toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            drained = false;
            log.warn("Connector '{}': {} operation(s) still in flight after {}; cancelling them", workerId,
                    inFlightOperations(), grace);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            drained = false;
        } catch (ExecutionException e) {
            // cannot happen: failures were mapped to null above
        }
        close();
        return drained;
    }

    /** Cancels every operation in flight, closes the agents (releasing all registrations) and the transport. Idempotent. */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            accepting = false;
            closed = true;
        }
        for (AbstractOperation operation : inFlight.snapshot()) {
            try {
                operation.close();
            } catch (RuntimeException e) {
                log.warn("Closing {} failed", operation, e);
            }
        }
        for (Connection connection : List.copyOf(connections)) {
            connection.close();
        }
        transport.close();
        scheduler.shutdownNow();
        log.info("nixl-connect connector '{}' closed", workerId);
    }

    @Override
    public String toString() {
        return "Connector[name=" + workerId + ", backend=" + transport.name() + "]";
    }
}
