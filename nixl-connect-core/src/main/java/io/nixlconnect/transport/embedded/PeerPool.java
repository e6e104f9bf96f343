package io.nixlconnect.transport.embedded;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Connections to one peer endpoint: at most {@code max} at once, idle ones reused, transfers beyond the
 * limit queued and run by whichever worker frees a connection first (no thread waits idle for one).
 */
final class PeerPool {

    private final int max;
    private final Executor executor;
    private final SameHostPeer sameHost;
    private final Deque<Link> idle = new ArrayDeque<>();
    private final Deque<EmbeddedTransfer> waiting = new ArrayDeque<>();
    private int open;
    private boolean closed;

    PeerPool(int max, Executor executor, SameHostPeer sameHost) {
        this.max = max;
        this.executor = executor;
        this.sameHost = sameHost;
    }

    SameHostPeer sameHost() {
        return sameHost;
    }

    void submit(EmbeddedTransfer transfer) {
        Link channel;
        synchronized (this) {
            if (!idle.isEmpty()) {
                channel = idle.pop();
            } else if (open < max) {
                open++;
                channel = null;
            } else {
                waiting.add(transfer);
                return;
            }
        }
        Dispatch dispatch = new Dispatch(transfer, channel);
        transfer.dispatched(dispatch);
        executor.execute(dispatch);
    }

    /**
     * A transfer handed to the workers with the connection it is to use. Whoever claims it first runs it: a worker,
     * or the thread that waits for the transfer ({@link EmbeddedTransfer#runOnWaitingThread()}), which then spares
     * the hand-off to the worker and the worker's wake-up call back. Claiming also takes the connection. It extends
     * {@link AtomicBoolean} (the claim) to be one object per transfer, not two; it is never serialized.
     */
    final class Dispatch extends AtomicBoolean implements Runnable {
        private static final long serialVersionUID = 1L;
        private final transient EmbeddedTransfer transfer;
        private final transient Link channel;

        Dispatch(EmbeddedTransfer transfer, Link channel) {
            this.transfer = transfer;
            this.channel = channel;
        }

        /** A worker: runs the transfer, then the transfers queued for a connection, unless the waiter claimed it. */
        @Override
        public void run() {
            if (compareAndSet(false, true)) {
                drive(transfer, channel);
            }
        }

        /** The waiting thread: runs this one transfer if no worker has claimed it, and hands the connection on. */
        void runHere() {
            if (!compareAndSet(false, true)) {
                return;
            }
            Link current = transfer.run(channel, sameHost);
            EmbeddedTransfer next = next(current);
            if (next != null) {
                executor.execute(() -> drive(next, current)); // the caller goes back to its own work
            }
        }
    }

    private void drive(EmbeddedTransfer first, Link channel) {
        EmbeddedTransfer transfer = first;
        Link current = channel;
        while (transfer != null) {
            current = transfer.run(current, sameHost);
            transfer = next(current);
        }
    }

    /** After a transfer on {@code current} (null: dropped): the next queued transfer to run on it, or null (parked). */
    private synchronized EmbeddedTransfer next(Link current) {
        EmbeddedTransfer transfer = waiting.poll();
        if (transfer == null) {
            if (current != null && !closed) {
                idle.push(current);
            } else {
                open--;
                close(current);
            }
        }
        return transfer;
    }

    synchronized void remove(EmbeddedTransfer transfer) {
        waiting.remove(transfer);
    }

    void close() {
        synchronized (this) {
            closed = true;
            for (Link channel : idle) {
                close(channel);
            }
            open -= idle.size();
            idle.clear();
        }
    }

    private static void close(Link link) {
        if (link != null) {
            link.close();
        }
    }
}
