package io.nixlconnect.transport.nixl;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The one polling loop of an agent: it checks posted transfers and drains notifications.
 *
 * <p>Idle strategy: after any activity (an event, a new post or window) it keeps polling, spinning
 * for up to {@link #SPIN_NANOS} since that activity; then it parks with a doubling pause up to
 * {@link #MAX_BUSY_PARK_NANOS} while transfers or windows are pending, or {@link #IDLE_PARK_NANOS}
 * when nothing is (it still drains notifications that arrive early). New posts and windows unpark it
 * at once.
 *
 * <p>Why a time-based spin window: on one host UCX answers small reads through the <em>target</em>
 * agent's worker, which only progresses when this loop polls, and no event tells the target that a
 * read has arrived. With a fixed count of spin rounds the passive side was usually parked (up to
 * 500 us) by the time the read arrived, adding ~0.4 ms to every small operation. Spinning for a
 * bounded time after activity keeps request/response traffic at polling speed, while an agent with
 * only an open window and no recent traffic still parks (CPU cost: at most {@link #SPIN_NANOS} of
 * spinning per burst of activity). The spin yields rather than {@code onSpinWait()}s: on a loaded
 * host the spinning loop otherwise takes the core the caller (creating and posting the next request,
 * contending for NIXL's agent lock) or the peer needs; measured on 2 shared cores, yielding halved
 * every part of a 4 KiB READ, busy-spinning made the whole operation slower than parking.
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
                if (System.nanoTime() - lastActivity < SPIN_NANOS) {
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
