package io.nixlconnect.dynamo.internal.client;

import io.nixlconnect.dynamo.DynamoException;
import io.nixlconnect.dynamo.DynamoInstance;
import io.nixlconnect.dynamo.DynamoProtocolException;
import io.nixlconnect.dynamo.DynamoResponse;
import io.nixlconnect.dynamo.DynamoRuntime;
import io.nixlconnect.dynamo.DynamoSettings;
import io.nixlconnect.dynamo.DynamoStreamException;
import io.nixlconnect.dynamo.DynamoTimeoutException;
import io.nixlconnect.dynamo.DynamoWorkerException;
import io.nixlconnect.dynamo.PayloadCodec;
import io.nixlconnect.dynamo.ResponseStream;
import io.nixlconnect.dynamo.internal.Counters;
import io.nixlconnect.dynamo.internal.Listeners;
import io.nixlconnect.dynamo.internal.wire.ControlMessages;
import io.nixlconnect.dynamo.internal.wire.FrameInput;
import io.nixlconnect.dynamo.internal.wire.FrameTooLargeException;
import io.nixlconnect.dynamo.internal.wire.TwoPart;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.concurrent.Executor;
import java.util.concurrent.Flow;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * A call's response stream over the connection its worker opened: frames are read when asked for, in the reading
 * thread (or, subscribed, in a runtime thread while there is demand), so nothing is buffered beyond the socket's.
 */
public final class ResponseStreamImpl implements ResponseStream {

    private static final String VERSION = "Dynamo " + DynamoRuntime.SUPPORTED_VERSION;

    private final DynamoInstance instance;
    private final String requestId;
    private final PayloadCodec codec;
    private final Socket socket;
    private final FrameInput in;
    private final DynamoSettings settings;
    private final Counters counters;
    private final Listeners listeners;
    private final long startedNanos;
    private final Executor executor;
    private final Consumer<ResponseStreamImpl> onEnd;
    private final Object readLock = new Object();
    private final AtomicBoolean consumed = new AtomicBoolean();
    private final AtomicBoolean ended = new AtomicBoolean();
    private volatile @Nullable DynamoException failure;
    private volatile boolean complete;
    private volatile boolean stopped;
    private volatile boolean killed;
    private volatile boolean finished;

    public ResponseStreamImpl(DynamoInstance instance, String requestId, PayloadCodec codec, Socket socket,
            FrameInput in, DynamoSettings settings, Counters counters, Listeners listeners, long startedNanos,
            Executor executor,
            Consumer<ResponseStreamImpl> onEnd) {
        this.instance = instance;
        this.requestId = requestId;
        this.codec = codec;
        this.socket = socket;
        this.in = in;
        this.settings = settings;
        this.counters = counters;
        this.listeners = listeners;
        this.startedNanos = startedNanos;
        this.executor = executor;
        this.onEnd = onEnd;
    }

    @Override
    public DynamoInstance instance() {
        return instance;
    }

    @Override
    public String requestId() {
        return requestId;
    }

    @Override
    public boolean isComplete() {
        return complete;
    }

    @Override
    public @Nullable DynamoResponse read() {
        consumed.set(true);
        return next();
    }

    private @Nullable DynamoResponse next() {
        synchronized (readLock) {
            while (true) {
                DynamoException failed = failure;
                if (failed != null) {
                    throw failed;
                }
                if (finished) {
                    return null;
                }
                TwoPart frame;
                try {
                    // After complete_final only the sentinel is due: wait for it no longer than for a frame.
                    int first = in.beginFrame(complete ? settings.frameReadTimeout().toMillis()
                            : settings.streamIdleTimeout().toMillis());
                    if (first < 0) {
                        endOfConnection();
                        continue;
                    }
                    frame = TwoPart.read(in, first, settings.maxMessageSize());
                } catch (FrameTooLargeException e) {
                    counters.oversizedFrames.increment();
                    fail(e, true);
                    continue;
                } catch (FrameInput.FrameTimeoutException e) {
                    fail(new DynamoProtocolException("the worker's response frame stalled: " + e.getMessage()), true);
                    continue;
                } catch (SocketTimeoutException e) {
                    if (complete) {
                        finish();
                        continue;
                    }
                    fail(new DynamoTimeoutException("instance " + instance.instanceIdHex() + " of " + instance.endpoint()
                            + " sent nothing for " + settings.streamIdleTimeout().toMillis()
                            + " ms (streamIdleTimeout)"), false);
                    continue;
                } catch (IOException e) {
                    if (killed || failure != null) {
                        continue;
                    }
                    fail(new DynamoStreamException("the response stream from instance " + instance.instanceIdHex()
                            + " of " + instance.endpoint() + " broke before it was complete: " + e.getMessage(), e),
                            false);
                    continue;
                }
                DynamoResponse response = handle(frame);
                if (response != null) {
                    return response;
                }
            }
        }
    }

    /** One frame: a response, or null when it ended the stream or was a control frame to skip. */
    private @Nullable DynamoResponse handle(TwoPart frame) {
        if (frame.header().length > 0) {
            ControlMessages.Control control = ControlMessages.parseControl(frame.header());
            if (control == ControlMessages.Control.SENTINEL) {
                finish();
                return null;
            }
            fail(new DynamoProtocolException("the worker sent an unknown header frame on the response stream ("
                    + VERSION + ")"), true);
            return null;
        }
        if (frame.body().length == 0) {
            return null; // an empty frame carries nothing
        }
        ControlMessages.StreamItem item;
        try {
            item = ControlMessages.parseStreamBody(codec, frame.body());
        } catch (DynamoProtocolException e) {
            fail(e, true);
            return null;
        }
        if (item instanceof ControlMessages.Data data) {
            return data.response();
        }
        if (item instanceof ControlMessages.ErrorEvent error) {
            fail(new DynamoWorkerException("instance " + instance.instanceIdHex() + " of " + instance.endpoint()
                    + " failed: " + error.message(), error.message(), error.errorClass()), false);
            return null;
        }
        complete = true; // complete_final; its sentinel follows
        return null;
    }

    private void endOfConnection() {
        if (complete || stopped || killed) {
            finish();
            return;
        }
        fail(new DynamoStreamException("instance " + instance.instanceIdHex() + " of " + instance.endpoint()
                + " closed the response stream before it was complete (the worker died, or its host went away)", null),
                false);
    }

    private void finish() {
        finished = true;
        release();
    }

    /** Ends the stream with {@code cause}; {@code protocol}: the worker broke the protocol (counted as such). */
    void fail(DynamoException cause, boolean protocol) {
        if (failure == null && !finished) {
            failure = cause;
            if (protocol) {
                counters.protocolErrors.increment();
            }
            counters.callsFailed.increment();
        }
        release();
    }

    private void release() {
        if (ended.compareAndSet(false, true)) {
            CallHomeServer.closeQuietly(socket);
            counters.callsInFlight.decrementAndGet();
            onEnd.accept(this);
            DynamoException failed = failure;
            if (failed == null && killed && !complete) {
                failed = new io.nixlconnect.dynamo.DynamoCancelledException("the caller killed the stream");
            }
            listeners.callEnded(instance.endpoint(), requestId, startedNanos, failed);
        }
    }

    private void sendControl(ControlMessages.Control control) {
        byte[] frame = TwoPart.headerOnly(control.header()).encode();
        try {
            OutputStream out = socket.getOutputStream();
            synchronized (this) {
                out.write(frame);
                out.flush();
            }
        } catch (IOException e) {
            // the worker is gone already
        }
    }

    @Override
    public void stop() {
        if (ended.get() || stopped) {
            return;
        }
        stopped = true;
        counters.streamsCancelled.increment();
        sendControl(ControlMessages.Control.STOP);
    }

    @Override
    public void kill() {
        if (ended.get()) {
            return;
        }
        killed = true;
        counters.streamsCancelled.increment();
        sendControl(ControlMessages.Control.KILL);
        finished = true;
        release();
    }

    @Override
    public void close() {
        if (!ended.get()) {
            kill();
        }
    }

    @Override
    public List<DynamoResponse> readAll() {
        List<DynamoResponse> all = new ArrayList<>();
        for (DynamoResponse response; (response = read()) != null; ) {
            all.add(response);
        }
        return all;
    }

    @Override
    public Iterator<DynamoResponse> iterator() {
        consumed.set(true);
        return new Iterator<>() {
            private @Nullable DynamoResponse next;

            @Override
            public boolean hasNext() {
                if (next == null) {
                    next = read();
                }
                return next != null;
            }

            @Override
            public DynamoResponse next() {
                if (!hasNext()) {
                    throw new NoSuchElementException("the response stream is complete");
                }
                DynamoResponse response = next;
                next = null;
                return response;
            }
        };
    }

    @Override
    public void subscribe(Flow.Subscriber<? super DynamoResponse> subscriber) {
        if (!consumed.compareAndSet(false, true)) {
            subscriber.onSubscribe(new Flow.Subscription() {
                @Override
                public void request(long n) {
                }

                @Override
                public void cancel() {
                }
            });
            subscriber.onError(new IllegalStateException("this response stream is already being read"));
            return;
        }
        new Delivery(subscriber).start();
    }

    /** Reads and delivers while the subscriber has demand, one runtime thread at a time. */
    private final class Delivery implements Flow.Subscription, Runnable {
        private final Flow.Subscriber<? super DynamoResponse> subscriber;
        private final AtomicLong demand = new AtomicLong();
        private final AtomicBoolean running = new AtomicBoolean();
        private volatile boolean cancelled;
        private volatile boolean done;

        Delivery(Flow.Subscriber<? super DynamoResponse> subscriber) {
            this.subscriber = subscriber;
        }

        void start() {
            subscriber.onSubscribe(this);
        }

        @Override
        public void request(long n) {
            if (n <= 0) {
                cancelled = true;
                kill();
                signalError(new IllegalArgumentException("Flow.Subscription.request(" + n + "): demand must be positive"));
                return;
            }
            demand.accumulateAndGet(n, (a, b) -> a + b < 0 ? Long.MAX_VALUE : a + b);
            schedule();
        }

        private void schedule() {
            if (!done && !cancelled && running.compareAndSet(false, true)) {
                try {
                    executor.execute(this);
                } catch (java.util.concurrent.RejectedExecutionException e) {
                    running.set(false);
                    signalError(new DynamoException("the runtime is closed"));
                }
            }
        }

        @Override
        public void run() {
            try {
                while (!done && !cancelled && demand.get() > 0) {
                    DynamoResponse response;
                    try {
                        response = next();
                    } catch (DynamoException e) {
                        signalError(e);
                        return;
                    }
                    if (response == null) {
                        done = true;
                        if (!cancelled) {
                            subscriber.onComplete();
                        }
                        return;
                    }
                    demand.decrementAndGet();
                    subscriber.onNext(response);
                }
            } catch (RuntimeException e) {
                cancelled = true;
                kill();
            } finally {
                running.set(false);
            }
            if (!done && !cancelled && demand.get() > 0) {
                schedule();
            }
        }

        private void signalError(Throwable error) {
            if (!done) {
                done = true;
                subscriber.onError(error);
            }
        }

        @Override
        public void cancel() {
            cancelled = true;
            kill();
        }
    }
}
