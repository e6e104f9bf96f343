package io.nixlconnect;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A connector's operations from creation to end: counted against {@link ConnectorOptions#maxInFlightOperations()},
 * held for shutdown to wait for and close to cancel, and told to the {@link OperationListener}s, each start and end
 * once, started before finished.
 *
 * <p>An operation is counted in two steps, {@link #reserve()} before it is created and {@link #track} once it is, and
 * may end in between (a transfer that fails at once): whichever of {@link #track} and {@link #ended} comes second, as
 * the operation's tracking state decides, settles its books.
 */
final class InFlightOperations {

    private static final Logger log = LoggerFactory.getLogger(Connector.class);

    private final int limit;
    private final Set<AbstractOperation> operations = ConcurrentHashMap.newKeySet();
    private final AtomicInteger count = new AtomicInteger();
    private final List<OperationListener> listeners = new CopyOnWriteArrayList<>();

    InFlightOperations(int limit) {
        this.limit = limit;
    }

    /**
     * Counts an operation about to be created; undone by {@link #unreserve()} if creating it fails.
     *
     * @throws TooManyOperationsException when {@code limit} operations are in flight already
     */
    void reserve() {
        int now = count.incrementAndGet();
        if (now > limit) {
            count.decrementAndGet();
            throw new TooManyOperationsException("Too many operations in flight: " + (now - 1) + " of at most "
                    + limit + " (maxInFlightOperations); wait for some to finish", limit);
        }
    }

    /** The reserved operation was not created. */
    void unreserve() {
        count.decrementAndGet();
    }

    /** Holds the operation {@link #reserve() reserved} for, and tells the listeners it started. */
    void track(AbstractOperation operation) {
        operations.add(operation);
        if (operation.compareAndSetTracking(AbstractOperation.NEW, AbstractOperation.COUNTED)) {
            notifyListeners(operation, true);
        } else {
            // It ended before we counted it: settle its books here, as ended left them to us.
            operations.remove(operation);
            count.decrementAndGet();
            notifyListeners(operation, true);
            notifyListeners(operation, false);
        }
    }

    /** Called exactly once per operation when it reaches a terminal status. */
    void ended(AbstractOperation operation) {
        if (operation.getAndSetTracking(AbstractOperation.ENDED) == AbstractOperation.COUNTED) {
            operations.remove(operation);
            count.decrementAndGet();
            notifyListeners(operation, false);
        }
    }

    /** The operations in flight now. */
    List<AbstractOperation> snapshot() {
        return new ArrayList<>(operations);
    }

    /** Operations reserved and not yet ended. */
    int count() {
        return Math.max(0, count.get());
    }

    void addListener(OperationListener listener) {
        listeners.add(Objects.requireNonNull(listener, "listener"));
    }

    void removeListener(OperationListener listener) {
        listeners.remove(listener);
    }

    private void notifyListeners(AbstractOperation operation, boolean started) {
        for (OperationListener listener : listeners) {
            try {
                if (started) {
                    listener.operationStarted(operation);
                } else {
                    listener.operationFinished(operation);
                }
            } catch (RuntimeException e) {
                log.warn("OperationListener {} failed", listener, e);
            }
        }
    }
}
