package io.nixlconnect.dynamo.internal.client;

import io.nixlconnect.dynamo.DynamoException;
import io.nixlconnect.dynamo.DynamoInstance;
import io.nixlconnect.dynamo.DynamoTimeoutException;
import io.nixlconnect.dynamo.EndpointId;
import io.nixlconnect.dynamo.DynamoProtocolException;
import io.nixlconnect.dynamo.DynamoSettings;
import io.nixlconnect.dynamo.DynamoWorkerException;
import io.nixlconnect.dynamo.internal.Counters;
import io.nixlconnect.dynamo.internal.wire.ControlMessages;
import io.nixlconnect.dynamo.internal.wire.FrameInput;
import io.nixlconnect.dynamo.internal.wire.FrameTooLargeException;
import io.nixlconnect.dynamo.internal.wire.TwoPart;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where workers call home: the caller's listener ({@code DYN_TCP_RESPONSE_STREAM_HOST:PORT}). Each request registers a
 * subject; the worker that takes it connects here, names the subject in its handshake, and sends its prologue; the
 * connection is then handed to the request's {@link ResponseStreamImpl}. Connections that name no waiting subject,
 * or send anything but a handshake and a prologue, are counted and closed; at most {@value #MAX_HANDSHAKES} are read
 * at once.
 */
public final class CallHomeServer implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(CallHomeServer.class);
    static final int MAX_HANDSHAKES = 256;

    private final DynamoSettings settings;
    private final Counters counters;
    private final ExecutorService executor;
    private final ServerSocket server;
    private final String address;
    private final Map<String, PendingCall> pending = new ConcurrentHashMap<>();
    private final Semaphore handshakes = new Semaphore(MAX_HANDSHAKES);
    private final ScheduledExecutorService scheduler;
    private final AtomicBoolean sweepArmed = new AtomicBoolean();
    private volatile boolean closed;

    /** A request waiting for its worker to call home. */
    public static final class PendingCall {
        final String subject;
        final EndpointId endpoint;
        final DynamoInstance instance;
        final CompletableFuture<Connected> connected = new CompletableFuture<>();
        volatile long deadlineNanos;
        /** When the worker must have called home by, once it acknowledged the request; 0 before. */
        volatile long callHomeDeadlineNanos;

        PendingCall(String subject, EndpointId endpoint, DynamoInstance instance) {
            this.subject = subject;
            this.endpoint = endpoint;
            this.instance = instance;
        }
    }

    /** A worker that called home and sent a clean prologue: its connection, ready for data frames. */
    public record Connected(Socket socket, FrameInput in) {
    }

    public CallHomeServer(DynamoSettings settings, Counters counters, ExecutorService executor,
            ScheduledExecutorService scheduler, String advertisedHost) {
        this.settings = settings;
        this.counters = counters;
        this.executor = executor;
        this.scheduler = scheduler;
        try {
            server = new ServerSocket();
            server.setReuseAddress(true);
            server.bind(new InetSocketAddress(InetAddress.getByName(settings.responseStreamHost()),
                    settings.responseStreamPort()), 512);
        } catch (IOException e) {
            throw new DynamoException("cannot listen for workers calling home on " + settings.responseStreamHost() + ":"
                    + settings.responseStreamPort() + " (DYN_TCP_RESPONSE_STREAM_HOST/PORT): " + e.getMessage(), e);
        }
        String host = advertisedHost;
        address = (host.contains(":") ? "[" + host + "]" : host) + ":" + server.getLocalPort();
        try {
            executor.execute(this::acceptOne);
        } catch (RejectedExecutionException e) {
            closeQuietlyServer();
            throw new DynamoException("the runtime is closed");
        }
    }

    /** The address workers are told to call home to, {@code host:port}. */
    public String address() {
        return address;
    }

    public PendingCall register(String subject, EndpointId endpoint, DynamoInstance instance) {
        PendingCall call = new PendingCall(subject, endpoint, instance);
        call.deadlineNanos = System.nanoTime() + settings.ackTimeout().toNanos() + settings.callHomeTimeout().toNanos();
        pending.put(subject, call);
        return call;
    }

    /** Stops waiting for a subject (the call failed or was cancelled before its worker called home). */
    public void forget(PendingCall call) {
        pending.remove(call.subject, call);
    }

    /**
     * The worker acknowledged the call: it has {@code callHomeTimeout} to call home. No timer per call (scheduling and
     * cancelling one woke the timer thread twice per call): one sweep is armed while calls wait, for the earliest of
     * their deadlines, which later calls' deadlines never precede.
     */
    public void armCallHomeTimeout(PendingCall call) {
        long deadline = System.nanoTime() + settings.callHomeTimeout().toNanos();
        call.deadlineNanos = deadline;
        call.callHomeDeadlineNanos = deadline;
        armSweep(settings.callHomeTimeout().toNanos());
    }

    private void armSweep(long delayNanos) {
        if (closed || !sweepArmed.compareAndSet(false, true)) {
            return;
        }
        try {
            scheduler.schedule(this::sweep, Math.max(0, delayNanos), TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException e) {
            sweepArmed.set(false); // the runtime is closing
        }
    }

    /** Fails the calls whose worker acknowledged but has not called home in time; re-arms for the others. */
    private void sweep() {
        sweepArmed.set(false);
        long now = System.nanoTime();
        long next = Long.MAX_VALUE;
        for (PendingCall call : pending.values()) {
            long deadline = call.callHomeDeadlineNanos;
            if (deadline == 0 || call.connected.isDone()) {
                continue;
            }
            if (deadline - now <= 0) {
                forget(call);
                call.connected.completeExceptionally(new DynamoTimeoutException("instance "
                        + call.instance.instanceIdHex() + " of " + call.endpoint + " acknowledged the request but did"
                        + " not call home with its response stream within " + settings.callHomeTimeout().toMillis()
                        + " ms (callHomeTimeout)"));
            } else {
                next = Math.min(next, deadline - now);
            }
        }
        if (next != Long.MAX_VALUE) {
            armSweep(next);
        }
    }

    /** Fails the calls to an instance of an endpoint that have not been called home yet (it left discovery). */
    public void failWaiting(EndpointId endpoint, long instanceId, DynamoException failure) {
        for (PendingCall call : pending.values()) {
            if (call.instance.instanceId() == instanceId && call.endpoint.equals(endpoint)) {
                forget(call);
                call.connected.completeExceptionally(failure);
            }
        }
    }

    /**
     * Accepts one call home and reads its handshake and prologue on the same thread, having handed the listener to
     * another pool thread first: the worker's call home reaches its caller with one thread wake-up (this one's) instead
     * of two (an accepting thread's, then a handshake thread's). One thread accepts at a time; at most
     * {@value #MAX_HANDSHAKES} handshakes are read at once, each bounded by {@code frameReadTimeout}.
     */
    private void acceptOne() {
        Socket socket = null;
        while (!closed && socket == null) {
            try {
                socket = server.accept();
            } catch (IOException e) {
                if (!closed) {
                    LOG.warn("accepting a call home failed: {}", e.toString());
                    backOff(); // out of file descriptors, say: do not spin
                }
            }
        }
        if (socket == null) {
            return;
        }
        try {
            executor.execute(this::acceptOne);
        } catch (RejectedExecutionException e) {
            closeQuietly(socket); // the runtime is closing
            return;
        }
        if (!handshakes.tryAcquire()) {
            counters.protocolErrors.increment();
            closeQuietly(socket);
            return;
        }
        try {
            handshake(socket);
        } finally {
            handshakes.release();
        }
    }

    private void closeQuietlyServer() {
        try {
            server.close();
        } catch (IOException e) {
            // closing
        }
    }

    private void handshake(Socket socket) {
        PendingCall call = null;
        try {
            socket.setTcpNoDelay(true);
            FrameInput in = new FrameInput(socket, settings.frameReadTimeout().toMillis());
            int first = in.beginFrame(settings.frameReadTimeout().toMillis());
            if (first < 0) {
                closeQuietly(socket);
                return;
            }
            TwoPart handshake = TwoPart.read(in, first, settings.maxMessageSize());
            if (handshake.header().length == 0 || handshake.body().length != 0) {
                throw new DynamoProtocolException("a worker called home without a handshake (" + handshake.header().length
                        + "-byte header, " + handshake.body().length + "-byte body)");
            }
            String subject = ControlMessages.parseHandshake(handshake.header());
            call = pending.remove(subject);
            if (call == null) {
                throw new DynamoProtocolException("a worker called home for subject " + subject
                        + ", which no request here is waiting for (it timed out, or was never sent)");
            }
            long left = Math.max(1, (call.deadlineNanos - System.nanoTime()) / 1_000_000);
            first = in.beginFrame(Math.max(left, settings.frameReadTimeout().toMillis()));
            if (first < 0) {
                throw new IOException("the worker closed the response stream before its prologue");
            }
            TwoPart prologue = TwoPart.read(in, first, settings.maxMessageSize());
            if (prologue.header().length == 0) {
                throw new DynamoProtocolException("the worker sent data before the response prologue");
            }
            String error = ControlMessages.parsePrologue(prologue.header());
            if (error != null) {
                closeQuietly(socket);
                call.connected.completeExceptionally(new DynamoWorkerException("the worker could not start the"
                        + " response stream: " + error, error, null));
                return;
            }
            if (!call.connected.complete(new Connected(socket, in))) {
                closeQuietly(socket); // the call was cancelled meanwhile
            }
        } catch (DynamoException e) {
            counters.protocolErrors.increment();
            if (e instanceof FrameTooLargeException) {
                counters.oversizedFrames.increment();
            }
            closeQuietly(socket);
            if (call != null) {
                call.connected.completeExceptionally(e);
            } else {
                LOG.debug("refused a call home: {}", e.getMessage());
            }
        } catch (SocketTimeoutException e) {
            counters.protocolErrors.increment();
            closeQuietly(socket);
            if (call != null) {
                call.connected.completeExceptionally(new io.nixlconnect.dynamo.DynamoTimeoutException(
                        "the worker called home but sent no prologue in time: " + e.getMessage()));
            }
        } catch (IOException e) {
            closeQuietly(socket);
            if (call != null) {
                counters.protocolErrors.increment();
                call.connected.completeExceptionally(new io.nixlconnect.dynamo.DynamoStreamException(
                        "the worker's call home broke before its prologue: " + e.getMessage(), e));
            }
        }
    }

    static void backOff() {
        try {
            Thread.sleep(100);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static void closeQuietly(Socket socket) {
        try {
            socket.close();
        } catch (IOException e) {
            // closing
        }
    }

    @Override
    public void close() {
        closed = true;
        try {
            server.close();
        } catch (IOException e) {
            // closing
        }
        for (PendingCall call : pending.values()) {
            call.connected.completeExceptionally(new DynamoException("the runtime is closed"));
        }
        pending.clear();
    }
}
