package io.nixlconnect.autoconfigure.dynamo;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.nixlconnect.dynamo.DynamoException;
import io.nixlconnect.dynamo.DynamoListener;
import io.nixlconnect.dynamo.DynamoRuntime;
import io.nixlconnect.dynamo.EndpointId;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Makes each call of a {@link DynamoRuntime} a {@code nixl.dynamo.call} {@link Observation} and each request its
 * endpoints serve a {@code nixl.dynamo.request} one, paired by request id from the runtime's {@link DynamoListener}
 * events. A served request's observation is current on the handler's thread while the handler runs (the runtime
 * tells its start and end there), so that what the handler does (transfers, calls of other endpoints) is observed
 * within it. A call's starts on the calling thread, its parent whatever observation is current there; it ends on
 * whichever thread ends the stream, so no scope is opened. Tags: {@code endpoint}, and once ended {@code outcome};
 * the error, when there is one. See docs/observability.md.
 */
public class DynamoObservations implements DynamoListener, AutoCloseable {

    public static final String CALL = "nixl.dynamo.call";
    public static final String REQUEST = "nixl.dynamo.request";

    private record Running(Observation observation, Observation.Scope scope) {
    }

    private final DynamoRuntime runtime;
    private final ObservationRegistry registry;
    private final Map<String, Observation> calls = new ConcurrentHashMap<>();
    private final Map<String, Running> requests = new ConcurrentHashMap<>();

    public DynamoObservations(DynamoRuntime runtime, ObservationRegistry registry) {
        this.runtime = runtime;
        this.registry = registry;
        runtime.addListener(this);
    }

    private Observation start(String name, String contextualName, EndpointId endpoint) {
        return Observation.createNotStarted(name, registry).contextualName(contextualName + " " + endpoint)
                .lowCardinalityKeyValue(DynamoMeterBinder.ENDPOINT_TAG, endpoint.toString()).start();
    }

    private static void stop(Observation observation, Throwable failure, String outcome) {
        if (failure != null) {
            observation.error(failure);
        }
        observation.lowCardinalityKeyValue("outcome", outcome).stop();
    }

    @Override
    public void callStarted(EndpointId endpoint, String requestId) {
        if (!registry.isNoop()) {
            calls.put(requestId, start(CALL, "dynamo call", endpoint));
        }
    }

    @Override
    public void callEnded(EndpointId endpoint, String requestId, Duration elapsed, DynamoException failure) {
        Observation observation = calls.remove(requestId);
        if (observation != null) { // null: started before this listener was added, or while the registry was a no-op
            stop(observation, failure, DynamoOutcomes.call(failure));
        }
    }

    @Override
    public void requestStarted(EndpointId endpoint, String requestId) {
        if (!registry.isNoop()) {
            Observation observation = start(REQUEST, "dynamo serve", endpoint);
            requests.put(requestId, new Running(observation, observation.openScope()));
        }
    }

    @Override
    public void requestEnded(EndpointId endpoint, String requestId, Duration elapsed, Throwable failure) {
        Running running = requests.remove(requestId);
        if (running != null) {
            running.scope().close(); // on the thread that opened it: the runtime ends a request where it started it
            stop(running.observation(), failure, DynamoOutcomes.request(failure));
        }
    }

    @Override
    public void close() {
        runtime.removeListener(this);
    }
}
