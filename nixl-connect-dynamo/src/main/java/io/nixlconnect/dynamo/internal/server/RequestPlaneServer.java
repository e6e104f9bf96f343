package io.nixlconnect.dynamo.internal.server;

import io.nixlconnect.dynamo.DynamoException;
import io.nixlconnect.dynamo.DynamoHandler;
import io.nixlconnect.dynamo.DynamoSettings;
import io.nixlconnect.dynamo.EndpointId;
import io.nixlconnect.dynamo.internal.Counters;
import io.nixlconnect.dynamo.internal.Listeners;
import io.nixlconnect.dynamo.internal.Threads;
import io.nixlconnect.dynamo.internal.WriteWatchdog;
import io.nixlconnect.dynamo.internal.wire.Ack;
import io.nixlconnect.dynamo.internal.wire.ControlMessages;
import io.nixlconnect.dynamo.internal.wire.FrameInput;
import io.nixlconnect.dynamo.internal.wire.FrameTooLargeException;
import io.nixlconnect.dynamo.internal.wire.RequestFrame;
import io.nixlconnect.dynamo.internal.wire.TwoPart;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker's side of the request plane: one listener for all of this runtime's endpoints
 * ({@code DYN_TCP_RPC_HOST:PORT}), a reader thread per connection, each request frame answered in order: refused
 * (unknown endpoint, malformed, at capacity: {@code "Server overloaded: worker at capacity"}) or accepted and handed
 * to a {@link ServedCall} that calls home and runs the handler. A frame larger than the limit is refused before it
 * is allocated and ends its connection, as does a truncated or stalled one; nothing a peer sends stops the server.
 */
public final class RequestPlaneServer implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(RequestPlaneServer.class);

    private final DynamoSettings settings;
    private final Counters counters;
    final Listeners listeners;
    private final ExecutorService executor;
    private final WriteWatchdog watchdog;
    private final ServerSocket server;
    private final Semaphore connections;
    private final Semaphore permits;
    private final Map<String, Endpoint> endpoints = new ConcurrentHashMap<>();
    private final Set<Long> instanceIds = ConcurrentHashMap.newKeySet();
    private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
    private final Set<ServedCall> calls = ConcurrentHashMap.newKeySet();
    private final Thread acceptor;
    private volatile boolean closed;

    /** An endpoint served here. */
    public static final class Endpoint {
        final EndpointId id;
        final DynamoHandler handler;
        final AtomicInteger inFlight = new AtomicInteger();
        volatile boolean draining;

        public Endpoint(EndpointId id, DynamoHandler handler) {
            this.id = id;
            this.handler = handler;
        }

        public int inFlight() {
            return inFlight.get();
        }
    }

    public RequestPlaneServer(DynamoSettings settings, Counters counters, Listeners listeners, ExecutorService executor,
            WriteWatchdog watchdog) {
        this.settings = settings;
        this.counters = counters;
        this.listeners = listeners;
        this.executor = executor;
        this.watchdog = watchdog;
        this.connections = new Semaphore(settings.maxServerConnections());
        this.permits = new Semaphore(settings.maxConcurrentRequests());
        try {
            server = new ServerSocket();
            server.setReuseAddress(true);
            server.bind(new InetSocketAddress(InetAddress.getByName(settings.rpcHost()), settings.rpcPort()), 1024);
        } catch (IOException e) {
            throw new DynamoException("cannot listen for requests on " + settings.rpcHost() + ":" + settings.rpcPort()
                    + " (DYN_TCP_RPC_HOST/PORT): " + e.getMessage(), e);
        }
        acceptor = Threads.start("dynamo-request-plane-accept", this::acceptLoop);
    }

    public String host() {
        return settings.rpcHost();
    }

    public int port() {
        return server.getLocalPort();
    }

    /** Requests addressed to this instance id are this runtime's. */
    public void acceptInstanceId(long id) {
        instanceIds.add(id);
    }

    private static String key(EndpointId id) {
        return id.namespace() + "/" + id.component() + "/" + id.endpoint();
    }

    /** @throws IllegalStateException if the endpoint is served already */
    public Endpoint add(EndpointId id, DynamoHandler handler) {
        Endpoint endpoint = new Endpoint(id, handler);
        if (endpoints.putIfAbsent(key(id), endpoint) != null) {
            throw new IllegalStateException(id + " is served by this runtime already");
        }
        return endpoint;
    }

    /** Refuses the endpoint's new requests and waits up to {@code graceMillis} for those in flight; then kills them. */
    public void drain(Endpoint endpoint, long graceMillis) {
        drainUntil(endpoint, System.nanoTime() + graceMillis * 1_000_000L);
    }

    private void drainUntil(Endpoint endpoint, long deadline) {
        endpoint.draining = true;
        endpoints.remove(key(endpoint.id), endpoint);
        synchronized (endpoint) {
            while (endpoint.inFlight.get() > 0) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    break;
                }
                try {
                    endpoint.wait(Math.max(1, left / 1_000_000));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
        }
        for (ServedCall call : calls) {
            if (call.endpoint == endpoint) {
                call.kill("the endpoint " + endpoint.id + " is shutting down");
            }
        }
    }

    void finished(ServedCall call) {
        calls.remove(call);
        permits.release();
        counters.requestsInFlight.decrementAndGet();
        Endpoint endpoint = call.endpoint;
        endpoint.inFlight.decrementAndGet();
        synchronized (endpoint) {
            endpoint.notifyAll();
        }
    }

    private void acceptLoop() {
        while (!closed) {
            Socket socket;
            try {
                socket = server.accept();
            } catch (IOException e) {
                if (!closed) {
                    LOG.warn("accepting a request-plane connection failed: {}", e.toString());
                    try {
                        Thread.sleep(100); // out of file descriptors, say: do not spin
                    } catch (InterruptedException interrupted) {
                        Thread.currentThread().interrupt();
                        return;
                    }
                }
                continue;
            }
            if (!connections.tryAcquire()) {
                counters.requestsRefusedOther.increment();
                LOG.warn("refused a request-plane connection from {}: {} open (maxServerConnections)",
                        socket.getRemoteSocketAddress(), settings.maxServerConnections());
                closeQuietly(socket);
                continue;
            }
            sockets.add(socket);
            try {
                Threads.start("dynamo-request-plane-" + socket.getPort(), () -> {
                    try {
                        serve(socket);
                    } finally {
                        sockets.remove(socket);
                        closeQuietly(socket);
                        connections.release();
                    }
                });
            } catch (Error | RuntimeException e) {
                sockets.remove(socket);
                closeQuietly(socket);
                connections.release();
                LOG.warn("cannot start a thread for a request-plane connection: {}", e.toString());
            }
        }
    }

    private void serve(Socket socket) {
        WriteWatchdog.TimedOutput out = null;
        boolean idleClose = false;
        try {
            socket.setTcpNoDelay(true);
            FrameInput in = new FrameInput(socket, settings.frameReadTimeout().toMillis());
            out = watchdog.watch(socket, settings.frameReadTimeout().toMillis());
            long idleMillis = settings.serverConnectionIdleTimeout().toMillis();
            while (!closed) {
                int first;
                try {
                    first = in.beginFrame(idleMillis);
                } catch (java.net.SocketTimeoutException idle) {
                    idleClose = true; // nothing for serverConnectionIdleTimeout: counted once the socket is closed
                    return;
                }
                if (first < 0) {
                    return;
                }
                RequestFrame frame;
                try {
                    frame = RequestFrame.read(in, first, settings.maxMessageSize());
                } catch (FrameTooLargeException e) {
                    counters.protocolErrors.increment();
                    counters.oversizedFrames.increment();
                    counters.requestsRefusedOther.increment();
                    out.write(Ack.refused(Ack.tooLarge(e)));
                    return; // the rest of the frame is not read: the connection cannot go on
                } catch (io.nixlconnect.dynamo.DynamoProtocolException e) {
                    counters.protocolErrors.increment();
                    counters.requestsRefusedOther.increment();
                    out.write(Ack.refused("Decode error: " + e.getMessage()));
                    continue; // the frame was read whole
                }
                out.write(dispatch(frame));
            }
        } catch (EOFException | FrameInput.FrameTimeoutException e) {
            counters.protocolErrors.increment();
            LOG.debug("request-plane connection from {} ended inside a frame: {}", socket.getRemoteSocketAddress(),
                    e.getMessage());
        } catch (IOException e) {
            if (!closed) {
                LOG.debug("request-plane connection from {} ended: {}", socket.getRemoteSocketAddress(), e.toString());
            }
        } finally {
            if (out != null) {
                out.close();
            }
            if (idleClose) {
                closeQuietly(socket);
                counters.idleConnectionsClosed.increment();
                LOG.debug("closed the idle request-plane connection from {}", socket.getRemoteSocketAddress());
            }
        }
    }

    /** The acknowledgement of one request frame, after handing an accepted request to a handler thread. */
    private byte[] dispatch(RequestFrame frame) {
        String path = frame.path();
        int slash = path.indexOf('/');
        Endpoint endpoint = null;
        if (slash > 0) {
            try {
                long id = Long.parseUnsignedLong(path.substring(0, slash), 16);
                if (instanceIds.contains(id)) {
                    endpoint = endpoints.get(path.substring(slash + 1));
                }
            } catch (NumberFormatException e) {
                endpoint = null;
            }
        }
        if (endpoint == null || endpoint.draining) {
            counters.requestsRefusedOther.increment();
            return Ack.refused("Server unavailable: unknown endpoint " + path);
        }
        if (closed) {
            counters.requestsRefusedOther.increment();
            return Ack.refused("Server unavailable: shutting down");
        }
        ControlMessages.RequestControl control;
        TwoPart payload;
        try {
            payload = TwoPart.parse(frame.payload(), ControlMessages.MAX_CONTROL_HEADER);
            control = ControlMessages.parseRequestHeader(payload.header());
        } catch (DynamoException e) {
            counters.protocolErrors.increment();
            counters.requestsRefusedOther.increment();
            String reason = "Decode error: " + e.getMessage();
            listeners.requestRefused(endpoint.id, null, reason);
            return Ack.refused(reason);
        }
        if (!permits.tryAcquire()) {
            counters.requestsRefusedOverloaded.increment();
            listeners.requestRefused(endpoint.id, control.id(), Ack.OVERLOADED);
            return Ack.refused(Ack.OVERLOADED);
        }
        endpoint.inFlight.incrementAndGet();
        counters.requestsInFlight.incrementAndGet();
        ServedCall call = new ServedCall(this, endpoint, control, frame.headers(), payload.body(), settings, counters,
                watchdog, executor);
        calls.add(call);
        counters.requestsServed.increment(); // before it runs: its caller may be answered before execute returns
        try {
            executor.execute(call);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            counters.requestsServed.decrement();
            finished(call);
            counters.requestsRefusedOther.increment();
            return Ack.refused("Server unavailable: shutting down");
        }
        return Ack.accepted();
    }

    static void closeQuietly(Socket socket) {
        try {
            socket.close();
        } catch (IOException e) {
            // closing
        }
    }

    /** Stops accepting, waits up to {@code graceMillis} for requests in flight, then ends what is left. */
    @Override
    public void close() {
        close(0);
    }

    public void close(long graceMillis) {
        closed = true;
        try {
            server.close();
        } catch (IOException e) {
            // closing
        }
        // The listening socket is released when the accepting thread leaves accept(): wait for it, so that a
        // runtime started next on the same port (a worker restarted in-process) can bind it.
        if (Thread.currentThread() != acceptor) {
            try {
                acceptor.join(5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        long deadline = System.nanoTime() + graceMillis * 1_000_000L;
        java.util.List<Endpoint> all = new java.util.ArrayList<>(endpoints.values());
        for (Endpoint endpoint : all) {
            endpoint.draining = true;
        }
        for (Endpoint endpoint : all) {
            drainUntil(endpoint, deadline);
        }
        for (ServedCall call : calls) {
            call.kill("the runtime is closing");
        }
        for (Socket socket : sockets) {
            closeQuietly(socket);
        }
    }
}
