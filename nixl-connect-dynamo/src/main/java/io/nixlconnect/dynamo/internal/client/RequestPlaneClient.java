package io.nixlconnect.dynamo.internal.client;

import io.nixlconnect.dynamo.DynamoException;
import io.nixlconnect.dynamo.DynamoInstance;
import io.nixlconnect.dynamo.DynamoProtocolException;
import io.nixlconnect.dynamo.DynamoSettings;
import io.nixlconnect.dynamo.DynamoStreamException;
import io.nixlconnect.dynamo.DynamoTimeoutException;
import io.nixlconnect.dynamo.internal.Counters;
import io.nixlconnect.dynamo.internal.Threads;
import io.nixlconnect.dynamo.internal.WriteWatchdog;
import io.nixlconnect.dynamo.internal.wire.Ack;
import io.nixlconnect.dynamo.internal.wire.FrameInput;
import io.nixlconnect.dynamo.internal.wire.FrameTooLargeException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.ArrayDeque;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The caller's side of the request plane: one connection per worker address, requests written on it in turn and
 * acknowledged in the same order (Dynamo's worker answers each frame before reading the next), read by one thread
 * per connection. A connection that breaks, or whose acknowledgement does not come within {@code ackTimeout}, is
 * closed and every request waiting on it fails.
 */
public final class RequestPlaneClient implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(RequestPlaneClient.class);

    private final DynamoSettings settings;
    private final Counters counters;
    private final ScheduledExecutorService scheduler;
    private final WriteWatchdog watchdog;
    private final Map<String, Connection> connections = new ConcurrentHashMap<>();
    private volatile boolean closed;

    public RequestPlaneClient(DynamoSettings settings, Counters counters, ScheduledExecutorService scheduler,
            WriteWatchdog watchdog) {
        this.settings = settings;
        this.counters = counters;
        this.scheduler = scheduler;
        this.watchdog = watchdog;
    }

    /**
     * Sends a request frame to an instance; the future completes with "" when the worker accepts it, or with its
     * refusal text, or fails with a {@link DynamoException} (cannot connect, connection broken, no answer in time).
     * Blocks while connecting and writing.
     */
    public CompletableFuture<String> send(DynamoInstance instance, byte[] frame) {
        CompletableFuture<String> ack = new CompletableFuture<>();
        if (closed) {
            ack.completeExceptionally(new DynamoException("the runtime is closed"));
            return ack;
        }
        Connection connection;
        try {
            connection = connection(instance);
        } catch (DynamoException e) {
            ack.completeExceptionally(e);
            return ack;
        }
        connection.send(frame, ack);
        return ack;
    }

    private Connection connection(DynamoInstance instance) {
        String key = instance.host() + ":" + instance.port();
        Connection existing = connections.get(key);
        if (existing != null && existing.open()) {
            return existing;
        }
        synchronized (this) {
            existing = connections.get(key);
            if (existing != null && existing.open()) {
                return existing;
            }
            Connection created = new Connection(key, instance);
            connections.put(key, created);
            return created;
        }
    }

    private final class Connection {
        private final String key;
        private final Socket socket;
        private final WriteWatchdog.TimedOutput out;
        private final FrameInput in;
        private final ArrayDeque<CompletableFuture<String>> pending = new ArrayDeque<>();
        private volatile boolean broken;

        Connection(String key, DynamoInstance instance) {
            this.key = key;
            socket = new Socket();
            try {
                socket.setTcpNoDelay(true);
                socket.connect(new InetSocketAddress(instance.host(), instance.port()),
                        (int) settings.connectTimeout().toMillis());
                out = watchdog.watch(socket, settings.frameReadTimeout().toMillis());
                in = new FrameInput(socket, settings.frameReadTimeout().toMillis());
            } catch (IOException e) {
                closeQuietly();
                throw new DynamoStreamException("cannot connect to instance " + instance.instanceIdHex() + " of "
                        + instance.endpoint() + " at " + key + ": " + e.getMessage(), e);
            }
            Threads.start("dynamo-ack-reader-" + key, this::readAcks);
        }

        boolean open() {
            return !broken && !socket.isClosed();
        }

        void send(byte[] frame, CompletableFuture<String> ack) {
            IOException failed = null;
            synchronized (this) { // the order of the frames is the order of their acknowledgements
                if (broken) {
                    ack.completeExceptionally(new DynamoStreamException("the connection to " + key + " broke", null));
                    return;
                }
                pending.addLast(ack);
                try {
                    out.write(frame);
                } catch (IOException e) {
                    failed = e;
                }
            }
            if (failed != null) {
                fail(new DynamoStreamException("sending a request to " + key + " failed: " + failed.getMessage(), failed));
                return;
            }
            try {
                java.util.concurrent.ScheduledFuture<?> timer = scheduler.schedule(() -> {
                    if (!ack.isDone()) {
                        fail(new DynamoTimeoutException("the worker at " + key + " did not acknowledge a request within "
                                + settings.ackTimeout().toMillis() + " ms"));
                    }
                }, settings.ackTimeout().toMillis(), TimeUnit.MILLISECONDS);
                ack.whenComplete((answer, failure) -> timer.cancel(false)); // as in DynamoClientImpl: no idle wake-ups
            } catch (java.util.concurrent.RejectedExecutionException e) {
                fail(new DynamoException("the runtime is closed"));
            }
        }

        private void readAcks() {
            try {
                while (!broken) {
                    int first = in.beginFrame(0);
                    if (first < 0) {
                        fail(new DynamoStreamException("the worker at " + key + " closed the connection", null));
                        return;
                    }
                    String answer = Ack.read(in, first);
                    CompletableFuture<String> ack;
                    synchronized (this) {
                        ack = pending.pollFirst();
                    }
                    if (ack == null) {
                        counters.protocolErrors.increment();
                        fail(new DynamoProtocolException("the worker at " + key
                                + " acknowledged a request that was not sent"));
                        return;
                    }
                    ack.complete(answer);
                }
            } catch (FrameTooLargeException e) {
                counters.protocolErrors.increment();
                counters.oversizedFrames.increment();
                fail(e);
            } catch (IOException e) {
                fail(new DynamoStreamException("the connection to the worker at " + key + " broke: " + e.getMessage(), e));
            }
        }

        void fail(DynamoException cause) {
            ArrayDeque<CompletableFuture<String>> failed;
            synchronized (this) {
                broken = true;
                failed = new ArrayDeque<>(pending);
                pending.clear();
            }
            connections.remove(key, this);
            closeQuietly();
            for (CompletableFuture<String> ack : failed) {
                ack.completeExceptionally(cause);
            }
            if (!failed.isEmpty()) {
                LOG.debug("request connection to {} closed: {}", key, cause.getMessage());
            }
        }

        private void closeQuietly() {
            try {
                socket.close();
            } catch (IOException e) {
                // closing
            }
        }
    }

    /** Closes the connection to an address (an instance that left), failing what waits on it. */
    public void disconnect(String host, int port) {
        Connection connection = connections.get(host + ":" + port);
        if (connection != null) {
            connection.fail(new DynamoStreamException("the connection to " + host + ":" + port + " was closed", null));
        }
    }

    @Override
    public void close() {
        closed = true;
        for (Connection connection : connections.values()) {
            connection.fail(new DynamoException("the runtime is closed"));
        }
        connections.clear();
    }
}
