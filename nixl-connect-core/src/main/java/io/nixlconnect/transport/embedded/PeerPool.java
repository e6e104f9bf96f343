package io.nixlconnect.transport.embedded;

import io.nixlconnect.internal.RunOutResources;
import io.nixlconnect.transport.TransportException;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Iterator;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Connections to one peer endpoint: at most {@code max} at once, idle ones reused, transfers beyond the
 * limit queued and run by whichever worker frees a connection first (no thread waits idle for one).
 *
 * <p>Idle connections are checked from time to time ({@link #checkIdle}): one whose peer closed its end is closed,
 * and one unused past the idle limit too; a pool left with no connection and nothing queued is retired, and its
 * transport makes a new one for the endpoint's next transfer. So a peer that leaves, or stops being used, leaves
 * no socket behind on this side.
 */
final class PeerPool {

    private final int max;
    private final Executor executor;
    private final SameHostPeer sameHost;
    private final PeerCounters counters;
    /** Most recently used first: the least recently used connections, at the end, are the first to idle out. */
    private final Deque<Link> idle = new ArrayDeque<>();
    private final Deque<EmbeddedTransfer> waiting = new ArrayDeque<>();
    private int open;
    private boolean closed;
    /** Closed by {@link #checkIdle} with nothing open or queued: takes no transfer ({@link #submit} says false). */
    private boolean retired;
    /** The peer dropped a {@link Wire#WRITE_STRIPE} unanswered (it predates them): its WRITEs take one connection. */
    private volatile boolean stripedWritesRefused;

    PeerPool(int max, Executor executor, SameHostPeer sameHost, PeerCounters counters) {
        this.max = max;
        this.executor = executor;
        this.sameHost = sameHost;
        this.counters = counters;
    }

    /** Connections open to this peer, idle or busy. */
    synchronized int openCount() {
        return open;
    }

    /** Connections waiting unused in this pool. */
    synchronized int idleCount() {
        return idle.size();
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

    /** Whether the peer check retired this pool (its transport makes a new one for the endpoint). */
    synchronized boolean isRetired() {
        return retired;
    }

    /** A borrowed connection (or permit) back: kept, or handed to a transfer queued for one; null: it was dropped. */
    void giveBack(Link link) {
        EmbeddedTransfer queued = next(link);
        if (queued != null) {
            startOnWorker(queued, link, null);
        }
    }

    /**
     * Runs {@code transfer} on a connection of this pool, now or once one is free.
     *
     * @return false if this pool was retired (idle and empty): the caller submits to the endpoint's new pool
     */
    boolean submit(EmbeddedTransfer transfer) {
        Link channel;
        synchronized (this) {
            if (retired) {
                return false;
            }
            if (!idle.isEmpty()) {
                channel = idle.pop();
            } else if (open < max) {
                open++;
                channel = null;
            } else {
                waiting.add(transfer);
                return true;
            }
        }
        Dispatch dispatch = new Dispatch(transfer, channel);
        transfer.dispatched(dispatch);
        if (!transfer.leftForWaitingThread()) {
            startOnWorker(transfer, channel, dispatch);
        }
        return true;
    }

    /**
     * Hands {@code transfer} (claimed through {@code dispatch}, when it has one) and then the queue to a worker over
     * {@code link}. When no worker thread can be started (the process is out of threads, or the executor shut down),
     * the transfer ends ERRORED with what ran out, its connection is closed and its place freed, and so on for each
     * queued transfer that would have run after it: nothing waits for a thread that will not come, and the next
     * transfer tries again.
     */
    private void startOnWorker(EmbeddedTransfer transfer, Link link, Dispatch dispatch) {
        EmbeddedTransfer next = transfer;
        Link current = link;
        Runnable task = dispatch;
        while (next != null) {
            EmbeddedTransfer first = next;
            Link channel = current;
            try {
                executor.execute(task != null ? task : () -> drive(first, channel));
                return;
            } catch (OutOfMemoryError | RejectedExecutionException e) {
                if (e instanceof OutOfMemoryError && !RunOutResources.isOutOfThreads(e)) {
                    throw (OutOfMemoryError) e;
                }
                if (task != null && !dispatch.claim()) {
                    return; // the waiting thread claimed it meanwhile and runs it
                }
                String what = e instanceof OutOfMemoryError ? RunOutResources.threads()
                        : "the transport's workers are shut down (closing)";
                TransportException failure = new TransportException("Transfer to a peer could not start: " + what);
                failure.addSuppressed(e);
                first.failToStart(failure);
                close(channel);
                current = null;
                task = null;
                next = next(null);
            }
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

        /** Claims the transfer for no one (it could not be handed to a worker); false if already claimed. */
        boolean claim() {
            return compareAndSet(false, true);
        }

        /** Hands a transfer left for its waiting thread to the workers after all. */
        void handToWorker() {
            startOnWorker(transfer, channel, this);
        }

        /** The waiting thread: runs this one transfer if no worker has claimed it, and hands the connection on. */
        void runHere() {
            if (!compareAndSet(false, true)) {
                return;
            }
            Link current = transfer.run(channel, PeerPool.this);
            EmbeddedTransfer next = next(current);
            if (next != null) {
                startOnWorker(next, current, null); // the caller goes back to its own work
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
                current.idleSince = System.nanoTime();
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

    /**
     * Closes the idle connections unused since before {@code now - idleNanos}, and those whose peer closed its end
     * (or sent something unasked); then retires the pool if it holds no connection and queues no transfer.
     *
     * @return whether the pool is retired (its transport forgets it)
     */
    synchronized boolean checkIdle(long now, long idleNanos) {
        if (closed) {
            return retired;
        }
        for (Iterator<Link> links = idle.descendingIterator(); links.hasNext(); ) {
            Link link = links.next();
            if (now - link.idleSince > idleNanos) {
                counters.idleClosed.increment();
            } else if (link.peerClosedWhileIdle()) {
                counters.departed.increment();
            } else {
                continue;
            }
            links.remove();
            open--;
            close(link);
        }
        if (open == 0 && waiting.isEmpty()) {
            retired = true;
            closed = true;
        }
        return retired;
    }

    /** Closes the idle connections now (the last peer loaded at this endpoint was dropped from its agent's cache). */
    synchronized void closeIdle() {
        for (Link link : idle) {
            close(link);
        }
        open -= idle.size();
        idle.clear();
    }

    synchronized void close() {
        closed = true;
        closeIdle();
    }

    private static void close(Link link) {
        if (link != null) {
            link.close();
        }
    }
}
