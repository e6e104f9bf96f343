package io.nixlconnect.dynamo.internal.server;

import io.nixlconnect.dynamo.DynamoCancelledException;
import io.nixlconnect.dynamo.DynamoException;
import io.nixlconnect.dynamo.DynamoRequest;
import io.nixlconnect.dynamo.DynamoResponder;
import io.nixlconnect.dynamo.DynamoResponse;
import io.nixlconnect.dynamo.DynamoSettings;
import io.nixlconnect.dynamo.EndpointId;
import io.nixlconnect.dynamo.PayloadCodec;
import io.nixlconnect.dynamo.internal.Counters;
import io.nixlconnect.dynamo.internal.WriteWatchdog;
import io.nixlconnect.dynamo.internal.codec.Payloads;
import io.nixlconnect.dynamo.internal.wire.ControlMessages;
import io.nixlconnect.dynamo.internal.wire.FrameInput;
import io.nixlconnect.dynamo.internal.wire.TwoPart;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One accepted request: decode it, call its caller home (handshake, prologue), run the handler with a responder
 * that streams data frames, then {@code complete_final} and the sentinel; an error event if the handler throws. A
 * reader on the call-home connection hears the caller's {@code stop} and {@code kill} (or its going away).
 */
final class ServedCall implements Runnable, DynamoRequest, DynamoResponder {

    private static final Logger LOG = LoggerFactory.getLogger(ServedCall.class);

    final RequestPlaneServer.Endpoint endpoint;
    private final RequestPlaneServer server;
    private final ControlMessages.RequestControl control;
    private final Map<String, String> headers;
    private final byte[] body;
    private final DynamoSettings settings;
    private final Counters counters;
    private final WriteWatchdog watchdog;
    private final java.util.concurrent.Executor executor;
    private @Nullable Object payload;
    private volatile @Nullable Socket socket;
    private volatile WriteWatchdog.@Nullable TimedOutput out;
    private volatile boolean stopped;
    private volatile boolean killed;
    /** The handler has returned: the caller closing its side now is the stream's normal end, not a cancellation. */
    private volatile boolean handled;
    private long startedNanos = System.nanoTime();
    private volatile @Nullable Throwable endFailure;

    ServedCall(RequestPlaneServer server, RequestPlaneServer.Endpoint endpoint, ControlMessages.RequestControl control,
            Map<String, String> headers, byte[] body, DynamoSettings settings, Counters counters,
            WriteWatchdog watchdog, java.util.concurrent.Executor executor) {
        this.server = server;
        this.endpoint = endpoint;
        this.control = control;
        this.headers = Map.copyOf(headers);
        this.body = body;
        this.settings = settings;
        this.counters = counters;
        this.watchdog = watchdog;
        this.executor = executor;
    }

    @Override
    public void run() {
        startedNanos = System.nanoTime();
        server.listeners.requestStarted(endpoint.id, control.id());
        try {
            serve();
        } finally {
            Socket current = socket;
            if (current != null) {
                RequestPlaneServer.closeQuietly(current);
            }
            WriteWatchdog.TimedOutput output = out;
            if (output != null) {
                output.close();
            }
            server.finished(this);
            Throwable failure = endFailure;
            if (failure == null && killed) {
                failure = new DynamoCancelledException("the caller killed the request or went away");
            }
            server.listeners.requestEnded(endpoint.id, control.id(), startedNanos, failure);
        }
    }

    private void serve() {
        String decodeError = null;
        try {
            payload = Payloads.decode(control.codec(), body, 0, body.length);
        } catch (DynamoException e) {
            counters.protocolErrors.increment();
            decodeError = "cannot decode the request's " + control.codec().wireName() + " payload: " + e.getMessage();
            endFailure = e;
        }
        if (!callHome()) {
            return;
        }
        try {
            write(TwoPart.headerOnly(ControlMessages.prologue(decodeError)));
            if (decodeError != null) {
                return;
            }
        } catch (IOException e) {
            callHomeBroke(e);
            return;
        }
        startControlReader();
        Throwable failure = null;
        try {
            endpoint.handler.handle(this, this);
        } catch (Exception | Error e) {
            failure = e;
        }
        handled = true;
        if (failure != null) {
            endFailure = failure;
        }
        if (killed) {
            return;
        }
        try {
            if (failure != null && !(failure instanceof DynamoCancelledException)) {
                counters.handlerErrors.increment();
                String message = failure.getClass().getSimpleName()
                        + (failure.getMessage() != null ? ": " + failure.getMessage() : "");
                LOG.debug("handler of {} failed for request {}", endpoint.id, control.id(), failure);
                write(TwoPart.bodyOnly(ControlMessages.errorFrame(control.codec(), message)));
            }
            write(TwoPart.bodyOnly(ControlMessages.completeFinal(control.codec())));
            write(TwoPart.headerOnly(ControlMessages.Control.SENTINEL.header()));
        } catch (IOException e) {
            if (!killed) {
                callHomeBroke(e);
            }
        }
    }

    /** Connects to the caller's call-home address and sends the handshake; false when the caller cannot be reached. */
    private boolean callHome() {
        Socket connection = new Socket();
        socket = connection;
        try {
            connection.setTcpNoDelay(true);
            connection.connect(new InetSocketAddress(control.host(), control.port()),
                    (int) settings.connectTimeout().toMillis());
            out = watchdog.watch(connection, settings.frameReadTimeout().toMillis());
            write(TwoPart.headerOnly(ControlMessages.handshake(control.subject())));
            return true;
        } catch (IOException e) {
            counters.callHomeFailures.increment();
            endFailure = new io.nixlconnect.dynamo.DynamoStreamException("cannot call home to " + control.host() + ":"
                    + control.port() + ": " + e.getMessage(), e);
            LOG.warn("cannot call home to {}:{} for request {} of {}: {}", control.host(), control.port(), control.id(),
                    endpoint.id, e.toString());
            return false;
        }
    }

    private void callHomeBroke(IOException e) {
        counters.callHomeFailures.increment();
        killed = true;
        LOG.debug("the response stream of request {} of {} broke: {}", control.id(), endpoint.id, e.toString());
    }

    private void write(TwoPart frame) throws IOException {
        WriteWatchdog.TimedOutput output = out;
        if (output == null) {
            throw new IOException("not connected");
        }
        output.write(frame.encode());
    }

    /** Reads the caller's control frames until the stream ends: stop, kill, or its going away. */
    private void startControlReader() {
        Socket connection = socket;
        if (connection == null) {
            return;
        }
        Runnable reader = () -> {
            try {
                FrameInput in = new FrameInput(connection, settings.frameReadTimeout().toMillis());
                while (!killed) {
                    int first = in.beginFrame(0);
                    if (first < 0) {
                        if (!killed && !handled) {
                            counters.streamsCancelled.increment(); // counted before the handler can see it
                            stopped = true; // the caller closed its side: nothing it wants any more
                        }
                        return;
                    }
                    TwoPart frame = TwoPart.read(in, first, ControlMessages.MAX_CONTROL_HEADER + TwoPart.PREFIX);
                    ControlMessages.Control message = frame.header().length > 0
                            ? ControlMessages.parseControl(frame.header()) : null;
                    if (message == ControlMessages.Control.STOP) {
                        counters.streamsCancelled.increment();
                        stopped = true;
                    } else if (message == ControlMessages.Control.KILL) {
                        counters.streamsCancelled.increment();
                        kill("the caller killed the request");
                        return;
                    } else if (message != ControlMessages.Control.SENTINEL) {
                        counters.protocolErrors.increment();
                        kill("the caller sent an unknown control frame");
                        return;
                    }
                }
            } catch (IOException | DynamoException e) {
                if (!killed && !handled) {
                    // the caller reset its side (it closed with responses unread), or sent garbage: it wants no more
                    counters.streamsCancelled.increment();
                    stopped = true;
                }
            }
        };
        try {
            executor.execute(reader);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            kill("the runtime is closing");
        }
    }

    /** Ends the request at once: nothing more is sent. */
    void kill(String reason) {
        if (!killed) {
            killed = true;
            stopped = true;
            LOG.debug("request {} of {} killed: {}", control.id(), endpoint.id, reason);
        }
        Socket current = socket;
        if (current != null) {
            RequestPlaneServer.closeQuietly(current);
        }
    }

    // ---- DynamoRequest ----

    @Override
    public EndpointId endpoint() {
        return endpoint.id;
    }

    @Override
    public String requestId() {
        return control.id();
    }

    @Override
    public @Nullable Object payload() {
        return payload;
    }

    @Override
    public PayloadCodec codec() {
        return control.codec();
    }

    @Override
    public Map<String, String> headers() {
        return headers;
    }

    @Override
    public boolean isStopped() {
        return stopped;
    }

    @Override
    public boolean isKilled() {
        return killed;
    }

    // ---- DynamoResponder ----

    @Override
    public void send(@Nullable Object data) {
        sendFrame(ControlMessages.dataFrame(control.codec(), data));
    }

    @Override
    public void send(DynamoResponse response) {
        sendFrame(ControlMessages.dataFrame(control.codec(), response));
    }

    private void sendFrame(byte[] frame) {
        if (killed) {
            throw new DynamoCancelledException("the caller of request " + control.id() + " killed it or went away");
        }
        if (frame.length + TwoPart.PREFIX > settings.maxMessageSize()) {
            throw new IllegalArgumentException("a response of " + frame.length + " bytes is larger than maxMessageSize ("
                    + settings.maxMessageSize() + ")");
        }
        try {
            write(TwoPart.bodyOnly(frame));
        } catch (IOException e) {
            callHomeBroke(e);
            throw new DynamoCancelledException("the caller of request " + control.id() + " went away: " + e.getMessage());
        }
    }

    @Override
    public String toString() {
        return "request " + control.id() + " of " + endpoint.id;
    }
}
