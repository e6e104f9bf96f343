package io.nixlconnect.autoconfigure.dynamo;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.nixlconnect.dynamo.DynamoCounters;
import io.nixlconnect.dynamo.DynamoException;
import io.nixlconnect.dynamo.DynamoListener;
import io.nixlconnect.dynamo.DynamoRuntime;
import io.nixlconnect.dynamo.EndpointId;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.ToLongFunction;

/**
 * A {@link DynamoRuntime}'s meters that are not timings (those come from the {@code nixl.dynamo.call} and
 * {@code nixl.dynamo.request} observations, {@link DynamoObservations}), per endpoint from its {@link DynamoListener}
 * events: calls and served requests in flight, requests refused; and the runtime's counters of protocol and discovery
 * failures. See docs/observability.md.
 */
public class DynamoMeterBinder implements MeterBinder, DynamoListener, AutoCloseable {

    public static final String CALLS_ACTIVE = "nixl.dynamo.calls.active";
    public static final String REQUESTS_ACTIVE = "nixl.dynamo.requests.active";
    public static final String REQUESTS_REFUSED = "nixl.dynamo.requests.refused";
    public static final String PROTOCOL_ERRORS = "nixl.dynamo.protocol.errors";
    public static final String CALL_HOME_FAILURES = "nixl.dynamo.call.home.failures";
    public static final String DISCOVERY_ERRORS = "nixl.dynamo.discovery.errors";
    public static final String DISCOVERY_REJECTED = "nixl.dynamo.discovery.rejected";
    /** The tag naming the endpoint, {@code ns.comp.ep}. */
    public static final String ENDPOINT_TAG = "endpoint";

    private final DynamoRuntime runtime;
    private final Map<EndpointId, AtomicLong> callsActive = new ConcurrentHashMap<>();
    private final Map<EndpointId, AtomicLong> requestsActive = new ConcurrentHashMap<>();
    private volatile MeterRegistry registry;

    public DynamoMeterBinder(DynamoRuntime runtime) {
        this.runtime = runtime;
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        this.registry = registry;
        counter(registry, PROTOCOL_ERRORS, DynamoCounters::protocolErrors,
                "Frames and payloads refused as malformed, truncated, slow, oversized or unknown, either side");
        counter(registry, CALL_HOME_FAILURES, DynamoCounters::callHomeFailures,
                "Callers' call-home addresses that refused, never answered or broke while streaming");
        counter(registry, DISCOVERY_ERRORS, DynamoCounters::discoveryErrors,
                "Failures to reach or update discovery (etcd unreachable, lease lost, directory unwritable)");
        counter(registry, DISCOVERY_REJECTED, DynamoCounters::discoveryEntriesRejected,
                "Discovery records that could not be read (garbage, too large, unsupported transport)");
        runtime.addListener(this);
    }

    private void counter(MeterRegistry registry, String name, ToLongFunction<DynamoCounters> count, String description) {
        FunctionCounter.builder(name, runtime, r -> count.applyAsLong(r.counters())).description(description)
                .register(registry);
    }

    /** The endpoint's in-flight count, its gauge registered the first time the endpoint is seen. */
    private AtomicLong active(Map<EndpointId, AtomicLong> counts, String name, EndpointId endpoint, String description) {
        return counts.computeIfAbsent(endpoint, id -> {
            AtomicLong count = new AtomicLong();
            MeterRegistry target = registry;
            if (target != null) {
                Gauge.builder(name, count, AtomicLong::get).tag(ENDPOINT_TAG, id.toString()).description(description)
                        .register(target);
            }
            return count;
        });
    }

    /** Never below zero: an end whose start came before this binder listened. */
    private static void decrement(AtomicLong count) {
        count.updateAndGet(value -> value > 0 ? value - 1 : 0);
    }

    @Override
    public void callStarted(EndpointId endpoint, String requestId) {
        active(callsActive, CALLS_ACTIVE, endpoint, "Calls of the endpoint in flight now").incrementAndGet();
    }

    @Override
    public void callEnded(EndpointId endpoint, String requestId, Duration elapsed, DynamoException failure) {
        decrement(active(callsActive, CALLS_ACTIVE, endpoint, "Calls of the endpoint in flight now"));
    }

    @Override
    public void requestStarted(EndpointId endpoint, String requestId) {
        active(requestsActive, REQUESTS_ACTIVE, endpoint, "Requests to the endpoint being served now").incrementAndGet();
    }

    @Override
    public void requestEnded(EndpointId endpoint, String requestId, Duration elapsed, Throwable failure) {
        decrement(active(requestsActive, REQUESTS_ACTIVE, endpoint, "Requests to the endpoint being served now"));
    }

    @Override
    public void requestRefused(EndpointId endpoint, String requestId, String reason) {
        MeterRegistry target = registry;
        if (target != null) {
            Counter.builder(REQUESTS_REFUSED).description("Requests to the endpoint refused as they arrived")
                    .tag(ENDPOINT_TAG, endpoint.toString()).tag("reason", DynamoOutcomes.refusal(reason))
                    .register(target).increment();
        }
    }

    @Override
    public void close() {
        runtime.removeListener(this);
    }
}
