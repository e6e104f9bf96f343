package io.nixlconnect.dynamo.internal;

import io.nixlconnect.dynamo.DynamoCounters;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/** The live counters behind {@link DynamoCounters}; one per runtime, shared by its parts. */
public final class Counters {

    public final LongAdder callsStarted = new LongAdder();
    public final LongAdder callsFailed = new LongAdder();
    public final LongAdder callsRefused = new LongAdder();
    public final AtomicLong callsInFlight = new AtomicLong();
    public final LongAdder requestsServed = new LongAdder();
    public final LongAdder requestsRefusedOverloaded = new LongAdder();
    public final LongAdder requestsRefusedOther = new LongAdder();
    public final AtomicLong requestsInFlight = new AtomicLong();
    public final LongAdder handlerErrors = new LongAdder();
    public final LongAdder callHomeFailures = new LongAdder();
    public final LongAdder streamsCancelled = new LongAdder();
    public final LongAdder protocolErrors = new LongAdder();
    public final LongAdder oversizedFrames = new LongAdder();
    public final LongAdder discoveryEntriesRejected = new LongAdder();
    public final LongAdder discoveryErrors = new LongAdder();
    public final LongAdder requestConnectionsOpened = new LongAdder();
    public final LongAdder requestConnectionsReplaced = new LongAdder();
    public final LongAdder idleConnectionsClosed = new LongAdder();

    public DynamoCounters snapshot() {
        return new DynamoCounters(callsStarted.sum(), callsFailed.sum(), callsRefused.sum(), callsInFlight.get(),
                requestsServed.sum(), requestsRefusedOverloaded.sum(), requestsRefusedOther.sum(),
                requestsInFlight.get(), handlerErrors.sum(), callHomeFailures.sum(), streamsCancelled.sum(),
                protocolErrors.sum(), oversizedFrames.sum(), discoveryEntriesRejected.sum(), discoveryErrors.sum(),
                requestConnectionsOpened.sum(), requestConnectionsReplaced.sum(), idleConnectionsClosed.sum());
    }
}
