package io.nixlconnect.dynamo.internal.client;

import io.nixlconnect.dynamo.DynamoClient;
import io.nixlconnect.dynamo.DynamoException;
import io.nixlconnect.dynamo.DynamoInstance;
import io.nixlconnect.dynamo.DynamoInstanceUnavailableException;
import io.nixlconnect.dynamo.DynamoRefusedException;
import io.nixlconnect.dynamo.DynamoSettings;
import io.nixlconnect.dynamo.EndpointId;
import io.nixlconnect.dynamo.ResponseStream;
import io.nixlconnect.dynamo.RouterMode;
import io.nixlconnect.dynamo.internal.Counters;
import io.nixlconnect.dynamo.internal.Listeners;
import io.nixlconnect.dynamo.internal.RandomIds;
import io.nixlconnect.dynamo.internal.codec.Payloads;
import io.nixlconnect.dynamo.internal.discovery.Discovery;
import io.nixlconnect.dynamo.internal.wire.ControlMessages;
import io.nixlconnect.dynamo.internal.wire.FrameTooLargeException;
import io.nixlconnect.dynamo.internal.wire.RequestFrame;
import io.nixlconnect.dynamo.internal.wire.TwoPart;
import java.time.Duration;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/** A client of one endpoint: follows its instances, routes calls, ties each call to its stream. */
public final class DynamoClientImpl implements DynamoClient {

    private final EndpointId endpoint;
    private final RouterMode mode;
    private final DynamoSettings settings;
    private final Counters counters;
    private final Listeners listeners;
    private final RequestPlaneClient requests;
    private final CallHomeServer callHome;
    private final ExecutorService executor;
    private final Discovery.Watch watch;
    private final Runnable onClose;
    private final AtomicLong next = new AtomicLong();
    private final Object instancesChanged = new Object();
    private volatile List<DynamoInstance> instances = List.of();
    private volatile boolean closed;

    public DynamoClientImpl(EndpointId endpoint, RouterMode mode, DynamoSettings settings, Counters counters,
            Listeners listeners, RequestPlaneClient requests, CallHomeServer callHome, ExecutorService executor,
            Discovery discovery, Runnable onClose) {
        this.endpoint = endpoint;
        this.mode = mode;
        this.settings = settings;
        this.counters = counters;
        this.listeners = listeners;
        this.requests = requests;
        this.callHome = callHome;
        this.executor = executor;
        this.onClose = onClose;
        this.watch = discovery.watch(endpoint, this::update);
        this.instances = watch.instances();
    }

    private void update(List<DynamoInstance> now) {
        Set<Long> before = new HashSet<>();
        for (DynamoInstance instance : instances) {
            before.add(instance.instanceId());
        }
        instances = now;
        for (DynamoInstance instance : now) {
            before.remove(instance.instanceId());
        }
        // Calls waiting for a departed instance to call home fail, as Dynamo's client cancels its pending streams.
        // Streams already open go on (a worker leaving discovery to shut down gracefully finishes them); a worker
        // that died breaks them by its connection.
        for (long gone : before) {
            callHome.failWaiting(endpoint, gone, new DynamoInstanceUnavailableException("instance "
                    + Long.toHexString(gone) + " of " + endpoint + " left discovery before it called home"));
        }
        synchronized (instancesChanged) {
            instancesChanged.notifyAll();
        }
    }

    @Override
    public EndpointId endpoint() {
        return endpoint;
    }

    @Override
    public RouterMode routerMode() {
        return mode;
    }

    @Override
    public List<DynamoInstance> instances() {
        return instances;
    }

    @Override
    public List<DynamoInstance> waitForInstances(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (instancesChanged) {
            while (instances.isEmpty()) {
                long left = deadline - System.nanoTime();
                if (left <= 0 || closed) {
                    throw new DynamoInstanceUnavailableException("no instance of " + endpoint + " appeared in discovery"
                            + " within " + timeout.toMillis() + " ms");
                }
                try {
                    instancesChanged.wait(Math.max(1, left / 1_000_000));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new DynamoInstanceUnavailableException("interrupted waiting for an instance of " + endpoint);
                }
            }
            return instances;
        }
    }

    private DynamoInstance route() {
        List<DynamoInstance> now = instances;
        if (now.isEmpty()) {
            throw new DynamoInstanceUnavailableException("no instance of " + endpoint + " is in discovery");
        }
        int index = mode == RouterMode.RANDOM ? ThreadLocalRandom.current().nextInt(now.size())
                : (int) Math.floorMod(next.getAndIncrement(), (long) now.size());
        return now.get(index);
    }

    private DynamoInstance instance(long instanceId) {
        for (DynamoInstance instance : instances) {
            if (instance.instanceId() == instanceId) {
                return instance;
            }
        }
        throw new DynamoInstanceUnavailableException("instance " + Long.toHexString(instanceId) + " of " + endpoint
                + " is not in discovery");
    }

    @Override
    public ResponseStream call(@Nullable Object request) {
        return await(routed(request, true));
    }

    @Override
    public ResponseStream callInstance(long instanceId, @Nullable Object request) {
        return await(direct(instanceId, request, true));
    }

    @Override
    public CompletableFuture<ResponseStream> callAsync(@Nullable Object request) {
        return routed(request, false);
    }

    @Override
    public CompletableFuture<ResponseStream> callInstanceAsync(long instanceId, @Nullable Object request) {
        return direct(instanceId, request, false);
    }

    private CompletableFuture<ResponseStream> routed(@Nullable Object request, boolean onCallingThread) {
        DynamoInstance instance;
        try {
            instance = route();
        } catch (DynamoException e) {
            return CompletableFuture.failedFuture(e);
        }
        return send(instance, request, onCallingThread);
    }

    private CompletableFuture<ResponseStream> direct(long instanceId, @Nullable Object request,
            boolean onCallingThread) {
        DynamoInstance instance;
        try {
            instance = instance(instanceId);
        } catch (DynamoException e) {
            return CompletableFuture.failedFuture(e);
        }
        return send(instance, request, onCallingThread);
    }

    private static ResponseStream await(CompletableFuture<ResponseStream> call) {
        try {
            return call.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            call.cancel(true);
            throw new io.nixlconnect.dynamo.DynamoCancelledException("interrupted while calling");
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException runtime) {
                // The failure as the async path reports it, with this thread's stack for context.
                runtime.addSuppressed(new Exception("called from here"));
                throw runtime;
            }
            throw new DynamoException("the call failed: " + cause, cause);
        }
    }

    /**
     * Sends the request. {@code onCallingThread}: a blocking call writes its frame itself (it waits anyway), sparing
     * a hand-off to the runtime's pool per call; an async one hands the write (and a first connection's connect) off.
     */
    private CompletableFuture<ResponseStream> send(DynamoInstance instance, @Nullable Object request,
            boolean onCallingThread) {
        if (closed) {
            return CompletableFuture.failedFuture(new DynamoException("the client of " + endpoint + " is closed"));
        }
        byte[] body = Payloads.encode(instance.codec(), request); // IllegalArgumentException: the caller's value
        String requestId = RandomIds.uuid();
        String subject = RandomIds.uuid();
        byte[] header = ControlMessages.requestHeader(requestId, instance.codec(), callHome.address(), subject);
        byte[] payload = new TwoPart(header, body).encode();
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put("request-id", requestId);
        headers.put("x-endpoint-path", instance.subject());
        byte[] frame = RequestFrame.encode(instance.subject(), headers, payload);
        if (frame.length > settings.maxMessageSize()) {
            return CompletableFuture.failedFuture(new FrameTooLargeException("the request", frame.length,
                    settings.maxMessageSize()));
        }
        counters.callsStarted.increment();
        listeners.callStarted(endpoint, requestId);
        long started = System.nanoTime();
        CallHomeServer.PendingCall pending = callHome.register(subject, endpoint, instance);
        CompletableFuture<ResponseStream> result = new CompletableFuture<>();
        pending.connected.whenComplete((connected, failure) -> {
            if (failure != null) {
                callHome.forget(pending);
                fail(result, failure, requestId, started);
                return;
            }
            ResponseStreamImpl stream = new ResponseStreamImpl(instance, requestId, instance.codec(),
                    connected.socket(), connected.in(), settings, counters, listeners, started, executor,
                    ended -> { });
            counters.callsInFlight.incrementAndGet();
            if (!result.complete(stream)) {
                stream.kill(); // the caller cancelled meanwhile
            }
        });
        result.whenComplete((stream, failure) -> {
            if (failure instanceof CancellationException) {
                callHome.forget(pending);
                pending.connected.cancel(false);
            }
        });
        Runnable write = () -> requests.send(instance, frame).whenComplete((answer, failure) -> {
            if (failure != null) {
                pending.connected.completeExceptionally(failure);
            } else if (!answer.isEmpty()) {
                counters.callsRefused.increment();
                pending.connected.completeExceptionally(new DynamoRefusedException("instance "
                        + instance.instanceIdHex() + " of " + endpoint + " refused the request: " + answer, answer));
            } else {
                callHome.armCallHomeTimeout(pending);
            }
        });
        if (onCallingThread) {
            write.run();
            return result;
        }
        try {
            executor.execute(write);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            pending.connected.completeExceptionally(new DynamoException("the runtime is closed"));
        }
        return result;
    }

    private void fail(CompletableFuture<ResponseStream> result, Throwable failure, String requestId, long started) {
        Throwable cause = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause()
                : failure;
        if (!(cause instanceof CancellationException)) {
            counters.callsFailed.increment();
        }
        listeners.callEnded(endpoint, requestId, started, cause instanceof DynamoException dynamo ? dynamo
                : new io.nixlconnect.dynamo.DynamoCancelledException("the call was cancelled: " + cause));
        result.completeExceptionally(cause);
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            watch.close();
            onClose.run();
            synchronized (instancesChanged) {
                instancesChanged.notifyAll();
            }
        }
    }

    @Override
    public String toString() {
        return "DynamoClient[" + endpoint + ", " + mode + ", " + instances.size() + " instances]";
    }
}
