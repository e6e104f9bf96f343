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
    private final long deferToPosterNanos;

    /**
     * Longest a worker leaves a small transfer ({@link EmbeddedTransfer#small()}) to the thread that posted it while
     * that thread is still running: it is most likely on its way to wait for the transfer and run it itself. Without
     * this, the worker — woken on the poster's CPU, where it preempts the poster — won the claim 51–65% of the time
     * (measured, docs/benchmarks.md), costing the two hand-offs the waiting thread is there to save; with it, under
     * 0.1%. The worker yields its CPU meanwhile (to the poster, if they share one), and goes ahead at once when the
     * poster blocks (a timed wait, other work that parks) or has claimed the transfer. What it costs: a poster that
     * keeps running after posting (asynchronous use) has its small transfer started up to this much later.
     */
    static final long DEFER_TO_POSTER_NANOS = 20_000;

    PeerPool(int max, Executor executor, SameHostPeer sameHost) {
        this(max, executor, sameHost, DEFER_TO_POSTER_NANOS);
    }

    /** {@code deferToPosterNanos}: see {@link #DEFER_TO_POSTER_NANOS} (tests set another). */
    PeerPool(int max, Executor executor, SameHostPeer sameHost, long deferToPosterNanos) {
        this.max = max;
        this.executor = executor;
        this.sameHost = sameHost;
        this.deferToPosterNanos = deferToPosterNanos;
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
        /** The thread that posted a small transfer, which the worker gives the first chance to run it; else null. */
        private final transient Thread poster;

        Dispatch(EmbeddedTransfer transfer, Link channel) {
            this.transfer = transfer;
            this.channel = channel;
            this.poster = transfer.small() ? Thread.currentThread() : null;
        }

        /** A worker: runs the transfer, then the transfers queued for a connection, unless the waiter claimed it. */
        @Override
        public void run() {
            deferToPoster();
            if (compareAndSet(false, true)) {
                drive(transfer, channel);
            }
        }

        /** See {@link #DEFER_TO_POSTER_NANOS}. */
        private void deferToPoster() {
            Thread thread = poster;
            if (thread == null || thread == Thread.currentThread()) {
                return;
            }
            long deadline = System.nanoTime() + deferToPosterNanos;
            while (!get() && thread.getState() == Thread.State.RUNNABLE && System.nanoTime() - deadline < 0) {
                Thread.yield();
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
