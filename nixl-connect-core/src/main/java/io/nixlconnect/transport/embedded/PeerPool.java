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
    /** The peer dropped a {@link Wire#WRITE_STRIPE} unanswered (it predates them): its WRITEs take one connection. */
    private volatile boolean stripedWritesRefused;

    PeerPool(int max, Executor executor, SameHostPeer sameHost) {
        this.max = max;
        this.executor = executor;
        this.sameHost = sameHost;
    }

    /** Connections open to this peer, idle or busy. */
    synchronized int openCount() {
        return open;
    }

    SameHostPeer sameHost() {
        return sameHost;
    }

    Executor executor() {
        return executor;
    }

    boolean stripedWritesRefused() {
        return stripedWritesRefused;
    }

    void refuseStripedWrites() {
        stripedWritesRefused = true;
    }

    /**
     * Up to {@code wanted} more connections for the stripes of a large transfer, without waiting: idle ones first,
     * then, while under the limit, null entries, each a permit to open a new connection. Every entry comes back
     * through {@link #giveBack}.
     */
    synchronized Link[] borrow(int wanted) {
        int n = closed ? 0 : Math.min(wanted, idle.size() + max - open);
        Link[] borrowed = new Link[Math.max(n, 0)];
        for (int i = 0; i < borrowed.length; i++) {
            if (!idle.isEmpty()) {
                borrowed[i] = idle.pop();
            } else {
                open++;
            }
        }
        return borrowed;
    }

    /** A borrowed connection (or permit) back: kept, or handed to a transfer queued for one; null: it was dropped. */
    void giveBack(Link link) {
        EmbeddedTransfer queued = next(link);
        if (queued != null) {
            executor.execute(() -> drive(queued, link));
        }
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
        if (!transfer.leftForWaitingThread()) {
            executor.execute(dispatch);
        }
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

        /** Hands a transfer left for its waiting thread to the workers after all. */
        void handToWorker() {
            executor.execute(this);
        }

        /** The waiting thread: runs this one transfer if no worker has claimed it, and hands the connection on. */
        void runHere() {
            if (!compareAndSet(false, true)) {
                return;
            }
            Link current = transfer.run(channel, PeerPool.this);
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
            current = transfer.run(current, this);
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
