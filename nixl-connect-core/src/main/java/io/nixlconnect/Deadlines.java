package io.nixlconnect;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The operations' time limits, on one timer thread with at most one timer task pending.
 *
 * <p>Armed deadlines wait in a priority queue by due time; the pending task fires at the earliest, expires what is
 * due and re-arms itself for the next one. Operations share one timeout, so a new deadline is later than the
 * pending task and arming does not wake the timer thread.
 */
final class Deadlines {

    private static final Logger log = LoggerFactory.getLogger(Deadlines.class);
    // Keeps deadline arithmetic (compared by subtraction) clear of overflow: about 146 years.
    private static final long MAX_DELAY_NANOS = Long.MAX_VALUE / 2;

    /**
     * A time limit, armed at most once at a time: {@link Deadlines#arm} it, {@link Deadlines#disarm} it when the
     * operation ends first. Its state is guarded by the {@link Deadlines} it is armed on.
     */
    static final class Deadline {
        private final Runnable expiry;
        private long dueNanos;
        private boolean armed;

        /** @param expiry runs on the timer thread once the limit has passed, unless disarmed first */
        Deadline(Runnable expiry) {
            this.expiry = expiry;
        }
    }

    private final ScheduledExecutorService timer;
    private final PriorityQueue<Deadline> armed = // guarded by this
            new PriorityQueue<>((a, b) -> Long.signum(a.dueNanos - b.dueNanos));
    private ScheduledFuture<?> pending; // guarded by this
    private long pendingDueNanos; // guarded by this

    Deadlines(ScheduledExecutorService timer) {
        this.timer = timer;
    }

    /**
     * Runs {@code deadline}'s expiry on the timer thread once {@code limit} has passed, unless disarmed first.
     *
     * @throws IllegalStateException if it is armed already
     */
    void arm(Deadline deadline, Duration limit) {
        long delay;
        try {
            delay = Math.min(limit.toNanos(), MAX_DELAY_NANOS);
        } catch (ArithmeticException e) {
            delay = MAX_DELAY_NANOS;
        }
        long due = System.nanoTime() + delay;
        synchronized (this) {
            if (deadline.armed) {
                throw new IllegalStateException("deadline armed twice");
            }
            deadline.dueNanos = due;
            deadline.armed = true;
            armed.add(deadline);
            if (pending == null || due - pendingDueNanos < 0) {
                schedule(due);
            }
        }
    }

    /** Forgets a deadline; its expiry will not run (unless it already has). Harmless when it is not armed. */
    synchronized void disarm(Deadline deadline) {
        if (deadline.armed) {
            deadline.armed = false;
            armed.remove(deadline);
        }
    }

    /** Armed deadlines (for tests and diagnostics). */
    synchronized int armedCount() {
        return armed.size();
    }

    private void expireDue() {
        List<Deadline> due = new ArrayList<>();
        synchronized (this) {
            long now = System.nanoTime();
            // Taken out here, under the lock: a racing disarm then finds it no longer armed, and only this pass runs it.
            while (!armed.isEmpty() && armed.peek().dueNanos - now <= 0) {
                Deadline deadline = armed.poll();
                deadline.armed = false;
                due.add(deadline);
            }
            if (pending != null) {
                pending.cancel(false);
                pending = null;
            }
            if (!armed.isEmpty()) {
                schedule(armed.peek().dueNanos);
            }
        }
        for (Deadline deadline : due) { // in due order, as polled
            try {
                deadline.expiry.run();
            } catch (RuntimeException e) {
                log.warn("Expiring an operation failed", e);
            }
        }
    }

    /** Call with this object's lock held. */
    private void schedule(long dueNanos) {
        if (pending != null) {
            pending.cancel(false);
        }
        try {
            pending = timer.schedule(this::expireDue, Math.max(0, dueNanos - System.nanoTime()), TimeUnit.NANOSECONDS);
            pendingDueNanos = dueNanos;
        } catch (RejectedExecutionException e) {
            // The connector is closing: it cancels every operation itself.
            pending = null;
        }
    }
}
