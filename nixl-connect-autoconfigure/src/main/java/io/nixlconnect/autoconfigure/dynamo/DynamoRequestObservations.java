package io.nixlconnect.autoconfigure.dynamo;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.nixlconnect.dynamo.DynamoListener;
import io.nixlconnect.dynamo.DynamoRuntime;
import io.nixlconnect.dynamo.EndpointId;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;

/**
 * Makes each request a {@link DynamoRuntime}'s endpoints serve a {@code nixl.dynamo.request} {@link Observation},
 * current on the handler's thread while the handler runs, so that what the handler does (transfers, calls of other
 * endpoints) is observed within it. Tags: {@code endpoint}, and once it ended {@code outcome} ({@code success},
 * {@code error}, {@code cancelled}); the error, when there is one. Built on {@link DynamoListener#requestStarted} and
 * {@link DynamoListener#requestEnded}, which the runtime tells on the handler's thread around the handler.
 */
public class DynamoRequestObservations implements DynamoListener, AutoCloseable {

    public static final String NAME = "nixl.dynamo.request";

    private record Running(Observation observation, Observation.Scope scope) {
    }

    private final DynamoRuntime runtime;
    private final ObservationRegistry registry;
    private final ThreadLocal<Deque<Running>> running = ThreadLocal.withInitial(ArrayDeque::new);

    public DynamoRequestObservations(DynamoRuntime runtime, ObservationRegistry registry) {
        this.runtime = runtime;
        this.registry = registry;
        runtime.addListener(this);
    }

    @Override
    public void requestStarted(EndpointId endpoint) {
        Observation observation = Observation.createNotStarted(NAME, registry)
                .contextualName("dynamo " + endpoint)
                .lowCardinalityKeyValue(DynamoMeterBinder.ENDPOINT_TAG, endpoint.toString())
                .start();
        running.get().push(new Running(observation, observation.openScope()));
    }

    @Override
    public void requestEnded(EndpointId endpoint, Duration elapsed, Throwable failure) {
        Deque<Running> stack = running.get();
        Running ended = stack.poll();
        if (stack.isEmpty()) {
            running.remove();
        }
        if (ended == null) {
            return; // started before this listener was added
        }
        ended.scope().close();
        if (failure != null) {
            ended.observation().error(failure);
        }
        ended.observation().lowCardinalityKeyValue("outcome", DynamoOutcomes.request(failure)).stop();
    }

    @Override
    public void close() {
        runtime.removeListener(this);
    }
}
