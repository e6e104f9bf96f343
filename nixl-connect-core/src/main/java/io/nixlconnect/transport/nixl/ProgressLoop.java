package io.nixlconnect.transport.nixl;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The one polling loop of an agent: it checks posted transfers and drains notifications.
 *
 * <p>Idle strategy: while one of the agent's transfers is in flight it never parks. Otherwise it paces itself by
 * who moves UCX:
 * <ul>
 * <li><b>NIXL's progress thread on</b> (refused by {@link NixlSettings}: it corrupted UCX at close; kept for when
 * that is solved): that thread waits on UCX's event descriptor and serves a peer's
 * requests (a read's remote completion, a notification) as they arrive, so this loop only learns of what has arrived.
 * It parks for a quarter of the time since the last activity (an event, a new post or window), from
 * {@link #MIN_PARK_NANOS} up to {@link #MAX_WAITING_PARK_NANOS} while windows are pending, or {@link #IDLE_PARK_NANOS}
 * when nothing is: a notification after a quiet spell of {@code t} is seen at most {@code t/4} (and
 * {@link #MAX_WAITING_PARK_NANOS}) late, and an agent with windows open but no traffic wakes a few hundred times a
 * second, not thousands (a hundred such agents on one host took both of its cores polling at 0.5 ms: docs/benchmarks.md,
 * issue 32).</li>
 * <li><b>NIXL's progress thread off</b> (the default): nothing but this loop moves UCX, and on one host UCX needs the <em>target</em>
 * agent's worker to progress before a reader's transfer completes, with no event telling the target. So after any
 * activity it keeps polling for up to {@link #SPIN_NANOS}; then it parks with a doubling pause up to
 * {@link #MAX_BUSY_PARK_NANOS} while windows are pending. With a fixed count of spin rounds the passive side was usually
 * parked (up to 500 us) by the time the read arrived, adding ~0.4 ms to every small operation.</li>
 * </ul>
 * New posts and windows unpark it at once.
 *
 * <p>How it spins: while one of this agent's transfers is in flight it spins on the CPU
 * ({@code onSpinWait}) within the spin window and yields after it, because nothing but this loop
 * completes the transfer and its caller is waiting; with nothing in flight it {@code yield}s, leaving the core to threads
 * that have work (a caller creating and posting the next request, the peer). Measured on 2 shared
 * cores (docs/benchmarks-history.md): yielding between the status checks of an in-flight 4 KiB READ added
 * ~30 us, busy-spinning while nothing was in flight slowed the callers' posts.
 */
final class ProgressLoop implements Runnable {

    static final long SPIN_NANOS = TimeUnit.MICROSECONDS.toNanos(1000);
    static final long MIN_PARK_NANOS = TimeUnit.MICROSECONDS.toNanos(20);
    static final long MAX_BUSY_PARK_NANOS = TimeUnit.MICROSECONDS.toNanos(500);
    static final long IDLE_PARK_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    /** With NIXL's progress thread on: the longest pause while windows are pending. */
    static final long MAX_WAITING_PARK_NANOS = TimeUnit.MILLISECONDS.toNanos(4);

    /** What the loop polls. */
    interface Work {
        /** Polls once; returns the number of events (finished transfers, notifications). */
        int pollOnce();

        /** Whether anything is pending that makes a short pause worthwhile. */
        boolean busy();

        /** Whether a posted transfer is waiting for this loop to see it complete. */
        boolean transfersInFlight();

        /** Called when polling throws: the loop stops and the agent fails what is pending. */
        void failed(Throwable error);
    }

    private final Work work;
    private final boolean nixlThreadProgresses;
    private final Thread thread;
    private volatile boolean running = true;
    private volatile boolean kicked;

    /**
     * @param nixlThreadProgresses whether NIXL's own progress thread moves UCX (then this loop need not spin for a
     *                             peer's sake)
     */
    ProgressLoop(String name, Work work, boolean nixlThreadProgresses) {
        this.work = work;
        this.nixlThreadProgresses = nixlThreadProgresses;
        this.thread = new Thread(this, name);
        thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    void wake() {
        kicked = true;
        LockSupport.unpark(thread);
    }

    boolean isLoopThread() {
        return Thread.currentThread() == thread;
    }

    boolean isAlive() {
        return running && thread.isAlive();
    }

    /** Stops the loop and waits for it to finish its current round. */
    void stop() {
        running = false;
        LockSupport.unpark(thread);
        if (Thread.currentThread() == thread) {
            return;
        }
        boolean interrupted = false;
        while (thread.isAlive()) {
            try {
                thread.join();
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** With NIXL's progress thread on: a quarter of the time since the last activity, within its bounds. */
    static long waitingPause(long sinceActivityNanos) {
        return Math.min(Math.max(MIN_PARK_NANOS, sinceActivityNanos >> 2), MAX_WAITING_PARK_NANOS);
    }

    @Override
    public void run() {
        long lastActivity = System.nanoTime();
        int parks = 0;
        try {
            while (running) {
                if (kicked) {
                    kicked = false;
                    lastActivity = System.nanoTime();
                    parks = 0;
                }
                if (work.pollOnce() > 0) {
                    lastActivity = System.nanoTime();
                    parks = 0;
                    continue;
                }
                long sinceActivity = System.nanoTime() - lastActivity;
                boolean spinning = sinceActivity < SPIN_NANOS;
                if (work.transfersInFlight()) {
                    // Never parks while a transfer is in flight: without NIXL's progress thread, UCX moves
                    // a large transfer's fragments only while this loop polls.
                    if (spinning) {
                        Thread.onSpinWait();
                    } else {
                        Thread.yield();
                    }
                } else if (nixlThreadProgresses) {
                    LockSupport.parkNanos(this, work.busy() ? waitingPause(sinceActivity) : IDLE_PARK_NANOS);
                } else if (spinning) {
                    Thread.yield();
                } else if (work.busy()) {
                    int doublings = Math.min(parks++, 10);
                    LockSupport.parkNanos(this, Math.min(MIN_PARK_NANOS << doublings, MAX_BUSY_PARK_NANOS));
                } else {
                    LockSupport.parkNanos(this, IDLE_PARK_NANOS);
                }
            }
        } catch (Throwable error) {
            running = false;
            work.failed(error);
        }
    }
}
