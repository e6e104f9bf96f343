package io.nixlconnect.autoconfigure.web;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * Decides which failures of a type get their stack trace logged: the first, then at most one per interval, so that
 * a peer failing every request cannot fill the log with identical stacks. Keeps the count of those logged without
 * one, for the next that gets one to report. Thread-safe.
 */
final class StackTraceRateLimit {

    /** Whether this failure gets its stack trace, and how many of its type went without one since the last that did. */
    record Verdict(boolean withStackTrace, int withoutSinceLast) {
    }

    private static final class Window {
        boolean started;
        long lastStackTraceNanos;
        int withoutSinceLast;
    }

    private final long intervalNanos;
    private final LongSupplier nanoClock;
    // keyed by the exceptions' classes: only the few types the handler answers ever get here
    private final Map<Class<?>, Window> windows = new ConcurrentHashMap<>();

    StackTraceRateLimit(Duration interval, LongSupplier nanoClock) {
        this.intervalNanos = interval.toNanos();
        this.nanoClock = nanoClock;
    }

    Duration interval() {
        return Duration.ofNanos(intervalNanos);
    }

    Verdict next(Class<? extends Throwable> type) {
        Window window = windows.computeIfAbsent(type, ignored -> new Window());
        synchronized (window) {
            long now = nanoClock.getAsLong();
            if (window.started && now - window.lastStackTraceNanos < intervalNanos) {
                window.withoutSinceLast++;
                return new Verdict(false, window.withoutSinceLast);
            }
            Verdict verdict = new Verdict(true, window.withoutSinceLast);
            window.started = true;
            window.lastStackTraceNanos = now;
            window.withoutSinceLast = 0;
            return verdict;
        }
    }
}
