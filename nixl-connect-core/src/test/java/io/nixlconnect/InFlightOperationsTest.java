package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nixlconnect.transport.embedded.EmbeddedSettings;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A connector's books of operations in flight, apart from the connector: the limit, the two-step count (an operation
 * that ends before it is tracked is settled by the tracking), and the listeners, each told once, started before
 * finished, a failing one not stopping the others. The operations are made directly, so that only these books count
 * them; their own connector is only their transport.
 */
class InFlightOperationsTest {

    private final Connector connector = new Connector(ConnectorOptions.builder().transports(EmbeddedSettings.defaults()).build());
    private final Descriptor memory = Descriptor.allocate(64);
    private final List<String> told = new ArrayList<>();
    private final List<AbstractOperation> made = new ArrayList<>();

    @AfterEach
    void close() {
        made.forEach(AbstractOperation::close);
        connector.close();
        memory.close();
    }

    @Test
    void theLimitRefusesOneMoreNamingItAndAnUnreservedSlotIsFreeAgain() {
        InFlightOperations inFlight = new InFlightOperations(2);
        inFlight.reserve();
        inFlight.reserve();
        assertThatThrownBy(inFlight::reserve).isInstanceOfSatisfying(TooManyOperationsException.class,
                e -> assertThat(e.limit()).isEqualTo(2))
                .hasMessage("Too many operations in flight: 2 of at most 2 (maxInFlightOperations); wait for some to finish");
        assertThat(inFlight.count()).isEqualTo(2);
        inFlight.unreserve();
        assertThat(inFlight.count()).isEqualTo(1);
        inFlight.reserve();
        assertThat(inFlight.count()).isEqualTo(2);
    }

    @Test
    void aTrackedOperationIsHeldAndToldStartedThenFinishedOnce() {
        InFlightOperations inFlight = listened(new InFlightOperations(8));
        AbstractOperation operation = operation();
        inFlight.reserve();
        inFlight.track(operation);
        assertThat(inFlight.snapshot()).containsExactly(operation);
        assertThat(inFlight.count()).isEqualTo(1);
        assertThat(told).containsExactly("started " + operation);
        inFlight.ended(operation);
        inFlight.ended(operation);
        assertThat(inFlight.snapshot()).isEmpty();
        assertThat(inFlight.count()).isZero();
        assertThat(told).containsExactly("started " + operation, "finished " + operation);
    }

    @Test
    void anOperationThatEndedBeforeItWasTrackedIsSettledByTheTracking() {
        InFlightOperations inFlight = listened(new InFlightOperations(8));
        AbstractOperation operation = operation();
        inFlight.reserve();
        inFlight.ended(operation); // not counted yet: left to track
        assertThat(told).isEmpty();
        assertThat(inFlight.count()).isEqualTo(1);
        inFlight.track(operation);
        assertThat(inFlight.snapshot()).isEmpty();
        assertThat(inFlight.count()).isZero();
        assertThat(told).containsExactly("started " + operation, "finished " + operation);
    }

    @Test
    void aFailingListenerDoesNotStopTheOthersAndARemovedOneIsNoLongerTold() {
        InFlightOperations inFlight = new InFlightOperations(8);
        OperationListener failing = new OperationListener() {
            @Override
            public void operationStarted(Operation operation) {
                throw new IllegalStateException("listener bug");
            }
        };
        inFlight.addListener(failing);
        listened(inFlight);
        AbstractOperation first = operation();
        inFlight.reserve();
        inFlight.track(first);
        assertThat(told).containsExactly("started " + first);
        inFlight.removeListener(failing);
        inFlight.removeListener(failing); // unknown now: ignored
        assertThatThrownBy(() -> inFlight.addListener(null)).isInstanceOf(NullPointerException.class);
        inFlight.ended(first);
        assertThat(told).containsExactly("started " + first, "finished " + first);
    }

    private InFlightOperations listened(InFlightOperations inFlight) {
        inFlight.addListener(new OperationListener() {
            @Override
            public void operationStarted(Operation operation) {
                told.add("started " + operation);
            }

            @Override
            public void operationFinished(Operation operation) {
                told.add("finished " + operation);
            }
        });
        return inFlight;
    }

    /** A writable made without its connector's books (which never see it start, so never count its end). */
    private AbstractOperation operation() {
        AbstractOperation operation = new WritableOperation(connector, List.of(memory));
        made.add(operation);
        return operation;
    }
}
