package io.nixlconnect;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The operations' time limits, on one timer thread with at most one timer task pending.
 *
 * <p>Arming a deadline adds it to a set; the pending task fires at the earliest deadline, expires what is
 * due and re-arms itself for the next one. Operations share one timeout, so a new deadline is later than
 * the pending task and arming costs no timer wake-up. A timer task per operation (the obvious design)
 * signalled the timer thread on every operation: about a tenth of a small read's start-up time.
 */
final class Deadlines {

    private static final Logger log = LoggerFactory.getLogger(Deadlines.class);
    // Keeps deadline arithmetic (compared by subtraction) clear of overflow: about 146 years.
    private static final long MAX_DELAY_NANOS = Long.MAX_VALUE / 2;

    /** An armed time limit; {@link Deadlines#disarm} it when the operation ends first. */
    static final class Deadline {
        private final long dueNanos;
        private final Runnable expiry;

        private Deadline(long dueNanos, Runnable expiry) {
            this.dueNanos = dueNanos;
            this.expiry = expiry;
        }
    }

    private final ScheduledExecutorService timer;
    private final Set<Deadline> armed = ConcurrentHashMap.newKeySet();
    private ScheduledFuture<?> pending; // guarded by this
    private long pendingDueNanos; // guarded by this

    Deadlines(ScheduledExecutorService timer) {
        this.timer = timer;
    }

    /** Runs {@code expiry} on the timer thread once {@code limit} has passed, unless disarmed first. */
    Deadline arm(Duration limit, Runnable expiry) {
        long delay;
        try {
            delay = Math.min(limit.toNanos(), MAX_DELAY_NANOS);
        } catch (ArithmeticException e) {
            delay = MAX_DELAY_NANOS;
        }
        Deadline deadline = new Deadline(System.nanoTime() + delay, expiry);
        // Added before the check below: a concurrent expiry pass either sees it or re-arms after this check.
        armed.add(deadline);
        synchronized (this) {
            if (pending == null || deadline.dueNanos - pendingDueNanos < 0) {
                schedule(deadline.dueNanos);
            }
        }
        return deadline;
    }

    /** Forgets a deadline; its expiry will not run (unless it already has). */
    void disarm(Deadline deadline) {
        armed.remove(deadline);
    }

    /** Armed deadlines (for tests and diagnostics). */
    int armedCount() {
        return armed.size();
    }

    private void expireDue() {
        List<Deadline> due = new ArrayList<>();
        synchronized (this) {
            long now = System.nanoTime();
            Deadline next = null;
            for (Deadline deadline : armed) {
                if (deadline.dueNanos - now <= 0) {
                    due.add(deadline);
                } else if (next == null || deadline.dueNanos - next.dueNanos < 0) {
                    next = deadline;
                }
            }
            if (pending != null) {
                pending.cancel(false);
                pending = null;
            }
            if (next != null) {
                schedule(next.dueNanos);
            }
        }
        for (Deadline deadline : due) {
            // Only the pass that removes it runs it: disarm may race with this one.
            if (armed.remove(deadline)) {
                try {
                    deadline.expiry.run();
                } catch (RuntimeException e) {
                    log.warn("Expiring an operation failed", e);
                }
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
