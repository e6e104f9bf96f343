package io.nixlconnect;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The operations' time limits, on one timer thread with at most one timer task pending.
 *
 * <p>Armed deadlines are linked into a list through their own fields (an operation's deadline is one of its
 * objects, so arming allocates nothing); the pending task fires at the earliest deadline, expires what is due and
 * re-arms itself for the next one. Operations share one timeout, so a new deadline is later than the pending task
 * and arming costs no timer wake-up. A timer task per operation (the obvious design) signalled the timer thread on
 * every operation: about a tenth of a small read's start-up time.
 */
final class Deadlines {

    private static final Logger log = LoggerFactory.getLogger(Deadlines.class);
    // Keeps deadline arithmetic (compared by subtraction) clear of overflow: about 146 years.
    private static final long MAX_DELAY_NANOS = Long.MAX_VALUE / 2;

    /**
     * A time limit, armed at most once at a time: {@link Deadlines#arm} it, {@link Deadlines#disarm} it when the
     * operation ends first. Its links are guarded by the {@link Deadlines} it is armed on.
     */
    abstract static class Deadline {
        private long dueNanos;
        private boolean armed;
        private Deadline previous;
        private Deadline next;

        /** Runs on the timer thread once the limit has passed, unless disarmed first. */
        abstract void expire();
    }

    private final ScheduledExecutorService timer;
    private Deadline first; // guarded by this
    private int armedCount; // guarded by this
    private ScheduledFuture<?> pending; // guarded by this
    private long pendingDueNanos; // guarded by this

    Deadlines(ScheduledExecutorService timer) {
        this.timer = timer;
    }

    /**
     * Runs {@code deadline}'s {@link Deadline#expire()} on the timer thread once {@code limit} has passed, unless
     * disarmed first.
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
            deadline.previous = null;
            deadline.next = first;
            if (first != null) {
                first.previous = deadline;
            }
            first = deadline;
            armedCount++;
            if (pending == null || due - pendingDueNanos < 0) {
                schedule(due);
            }
        }
    }

    /** Forgets a deadline; its expiry will not run (unless it already has). Harmless when it is not armed. */
    synchronized void disarm(Deadline deadline) {
        if (deadline.armed) {
            unlink(deadline);
        }
    }

    /** Armed deadlines (for tests and diagnostics). */
    synchronized int armedCount() {
        return armedCount;
    }

    private void unlink(Deadline deadline) {
        if (deadline.previous == null) {
            first = deadline.next;
        } else {
            deadline.previous.next = deadline.next;
        }
        if (deadline.next != null) {
            deadline.next.previous = deadline.previous;
        }
        deadline.previous = null;
        deadline.next = null;
        deadline.armed = false;
        armedCount--;
    }

    private void expireDue() {
        List<Deadline> due = null;
        synchronized (this) {
            long now = System.nanoTime();
            Deadline next = null;
            Deadline deadline = first;
            while (deadline != null) {
                Deadline following = deadline.next;
                if (deadline.dueNanos - now <= 0) {
                    // Unlinked here, under the lock: a racing disarm then finds it no longer armed, and only this
                    // pass runs it.
                    unlink(deadline);
                    if (due == null) {
                        due = new ArrayList<>();
                    }
                    due.add(deadline);
                } else if (next == null || deadline.dueNanos - next.dueNanos < 0) {
                    next = deadline;
                }
                deadline = following;
            }
            if (pending != null) {
                pending.cancel(false);
                pending = null;
            }
            if (next != null) {
                schedule(next.dueNanos);
            }
        }
        if (due == null) {
            return;
        }
        due.sort((a, b) -> Long.signum(a.dueNanos - b.dueNanos));
        for (Deadline deadline : due) {
            try {
                deadline.expire();
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
