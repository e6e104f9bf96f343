package io.nixlconnect.transport.nixl;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The one polling loop of an agent: it checks posted transfers and drains notifications.
 *
 * <p>Idle strategy: while one of the agent's transfers is in flight it never parks. Otherwise, after
 * any activity (an event, a new post or window) it keeps polling for up to {@link #SPIN_NANOS} since
 * that activity; then it parks with a doubling pause up to {@link #MAX_BUSY_PARK_NANOS} while windows
 * are pending, or {@link #IDLE_PARK_NANOS} when nothing is (it still drains notifications that arrive
 * early). New posts and windows unpark it at once.
 *
 * <p>Why a time-based spin window: on one host UCX answers small reads through the <em>target</em>
 * agent's worker, which only progresses when this loop polls, and no event tells the target that a
 * read has arrived. With a fixed count of spin rounds the passive side was usually parked (up to
 * 500 us) by the time the read arrived, adding ~0.4 ms to every small operation. Spinning for a
 * bounded time after activity keeps request/response traffic at polling speed, while an agent with
 * only an open window and no recent traffic still parks (CPU cost: at most {@link #SPIN_NANOS} of
 * spinning per burst of activity).
 *
 * <p>How it spins: while one of this agent's transfers is in flight it spins on the CPU
 * ({@code onSpinWait}) within the spin window and yields after it, because nothing but this loop
 * completes the transfer (without NIXL's progress thread UCX also moves fragments only when polled)
 * and its caller is waiting; with nothing in flight it {@code yield}s, leaving the core to threads
 * that have work (a caller creating and posting the next request, the peer). Measured on 2 shared
 * cores (docs/benchmarks-history.md): yielding between the status checks of an in-flight 4 KiB READ added
 * ~30 us, busy-spinning while nothing was in flight slowed the callers' posts.
 */
final class ProgressLoop implements Runnable {

    static final long SPIN_NANOS = TimeUnit.MICROSECONDS.toNanos(1000);
    static final long MIN_PARK_NANOS = TimeUnit.MICROSECONDS.toNanos(20);
    static final long MAX_BUSY_PARK_NANOS = TimeUnit.MICROSECONDS.toNanos(500);
    static final long IDLE_PARK_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

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
    private final Thread thread;
    private volatile boolean running = true;
    private volatile boolean kicked;

    ProgressLoop(String name, Work work) {
        this.work = work;
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
                boolean spinning = System.nanoTime() - lastActivity < SPIN_NANOS;
                if (work.transfersInFlight()) {
                    // Never parks while a transfer is in flight: without NIXL's progress thread, UCX moves
                    // a large transfer's fragments only while this loop polls.
                    if (spinning) {
                        Thread.onSpinWait();
                    } else {
                        Thread.yield();
                    }
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
