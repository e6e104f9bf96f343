package io.nixlconnect.cuda;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * The lifecycle of one allocation: a count of live uses, or closed. One atomic word, so that
 * "close" and "start using" cannot interleave into a use-after-free.
 */
final class UseCounter {

    private static final int CLOSED = -1;

    private final AtomicInteger state = new AtomicInteger();
    private final Supplier<String> description;

    UseCounter(Supplier<String> description) {
        this.description = description;
    }

    /** Starts a use; fails if already closed. */
    void acquire() {
        while (true) {
            int current = state.get();
            if (current == CLOSED) {
                throw new IllegalStateException(description.get() + " is closed");
            }
            if (current == Integer.MAX_VALUE) {
                throw new IllegalStateException(description.get() + " has too many live uses");
            }
            if (state.compareAndSet(current, current + 1)) {
                return;
            }
        }
    }

    /** Runs {@code action} as one use, so the memory cannot be freed underneath it. */
    void whileInUse(Runnable action) {
        acquire();
        try {
            action.run();
        } finally {
            release();
        }
    }

    LiveUse acquireUse() {
        acquire();
        return new LiveUse(this);
    }

    void release() {
        while (true) {
            int current = state.get();
            if (current <= 0) {
                throw new IllegalStateException(description.get() + " has no live use to release");
            }
            if (state.compareAndSet(current, current - 1)) {
                return;
            }
        }
    }

    /**
     * Moves to closed. Returns true if this call closed it (the caller then frees the memory), false if
     * it was already closed.
     *
     * @throws IllegalStateException if uses are live
     */
    boolean close() {
        while (true) {
            int current = state.get();
            if (current == CLOSED) {
                return false;
            }
            if (current > 0) {
                throw new IllegalStateException("Cannot close " + description.get()
                        + ": it is still registered in a live operation (" + current + " live use(s))");
            }
            if (state.compareAndSet(0, CLOSED)) {
                return true;
            }
        }
    }

    boolean isClosed() {
        return state.get() == CLOSED;
    }

    int liveUses() {
        return Math.max(0, state.get());
    }
}
