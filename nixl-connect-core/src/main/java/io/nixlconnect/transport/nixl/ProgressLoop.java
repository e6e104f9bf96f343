package io.nixlconnect.transport.nixl;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The one polling loop of an agent: it checks posted transfers and drains notifications.
 *
 * <p>Idle strategy: after any event it keeps polling; when nothing happens it spins briefly
 * ({@link #SPIN_ROUNDS} rounds), then parks with a doubling pause up to {@link #MAX_BUSY_PARK_NANOS}
 * while transfers or windows are pending, or {@link #IDLE_PARK_NANOS} when nothing is (it still
 * drains notifications that arrive early). New posts and windows unpark it at once.
 */
final class ProgressLoop implements Runnable {

    static final int SPIN_ROUNDS = 200;
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
        int quietRounds = 0;
        try {
            while (running) {
                if (kicked) {
                    kicked = false;
                    quietRounds = 0;
                }
                if (work.pollOnce() > 0) {
                    quietRounds = 0;
                    continue;
                }
                quietRounds++;
                if (quietRounds < SPIN_ROUNDS) {
                    Thread.onSpinWait();
                } else if (work.busy()) {
                    int doublings = Math.min(quietRounds - SPIN_ROUNDS, 10);
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
