package io.nixlconnect.dynamo;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

/**
 * Calls one endpoint's instances, as found in discovery and followed while the client is open: Dynamo's
 * {@code runtime.endpoint("ns.comp.ep").client()}. A call sends the request to an instance ({@link #routerMode()},
 * or the one named), waits for it to be acknowledged and for the worker to call home, and returns the stream of its
 * responses. Thread-safe; obtained from {@link DynamoRuntime#client}, closed with it or by {@link #close()}.
 *
 * <p>A request is a payload value (see the package documentation), encoded in the codec the instance asks for.
 */
public interface DynamoClient extends AutoCloseable {

    EndpointId endpoint();

    RouterMode routerMode();

    /** The instances discovery lists now, sorted by instance id. */
    List<DynamoInstance> instances();

    /**
     * Waits until discovery lists at least one instance.
     *
     * @return the instances then
     * @throws DynamoInstanceUnavailableException if none appears within {@code timeout}
     */
    List<DynamoInstance> waitForInstances(Duration timeout);

    /**
     * Calls an instance chosen by {@link #routerMode()}: returns once the worker has called home with a clean
     * prologue.
     *
     * @throws DynamoException why the call failed: no instance ({@link DynamoInstanceUnavailableException}), refused
     *                         ({@link DynamoRefusedException}), the worker could not start ({@link DynamoWorkerException}),
     *                         no answer in time ({@link DynamoTimeoutException}), a broken connection
     *                         ({@link DynamoStreamException}), a peer breaking the protocol ({@link DynamoProtocolException})
     * @throws IllegalArgumentException if the request is not made of payload values
     */
    ResponseStream call(@Nullable Object request);

    /** {@link #call(Object)} to the instance with this id (Dynamo's {@code direct}). */
    ResponseStream callInstance(long instanceId, @Nullable Object request);

    /** {@link #call(Object)} without blocking: the future completes with the stream or fails with its exception. */
    CompletableFuture<ResponseStream> callAsync(@Nullable Object request);

    /** {@link #callInstance} without blocking. */
    CompletableFuture<ResponseStream> callInstanceAsync(long instanceId, @Nullable Object request);

    /** Stops following discovery; calls in flight go on. */
    @Override
    void close();
}
