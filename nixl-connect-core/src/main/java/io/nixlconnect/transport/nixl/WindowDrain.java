package io.nixlconnect.transport.nixl;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Windows closed before their notification, until each is released: a peer's transfer may still be in flight, and
 * over UCX's software RMA (TCP) the agent's worker goes on reading or writing a window's memory whenever it
 * progresses, deregistered or not. A window is released when its notification arrives (the peer's transfer is over),
 * when the agent is destroyed ({@link #releaseAll}), or after {@link #drainLimitNanos} (a peer that has not finished
 * by then is taken to have given up; see docs/security.md for what a peer that stalls on purpose can still do over
 * TCP): then without its notification, and its bytes count as kept ({@link KeptMemory}). The agent adds a window only
 * while its native agent lives ({@link NixlAgentCore#drain}). Logs under {@link NixlAgentCore}'s logger, as before.
 */
final class WindowDrain {

    private static final Logger log = LoggerFactory.getLogger(NixlAgentCore.class);
    static final long DRAIN_BYTES_PER_SECOND = 100_000_000L;
    /** When not negative, the fixed part of {@link #drainLimitNanos} instead of {@link NixlSettings#drainLimit()}: tests shorten it. */
    static volatile long drainBaseNanos = -1;

    private final String agentName;
    private final Duration drainLimit;
    private final NotificationDispatcher dispatcher;
    private final KeptMemory kept;
    private final Set<NixlWindow> draining = ConcurrentHashMap.newKeySet();

    /** {@code drainLimit}: the fixed part of the drain limit ({@link NixlSettings#drainLimit()}). */
    WindowDrain(String agentName, Duration drainLimit, NotificationDispatcher dispatcher, KeptMemory kept) {
        this.agentName = agentName;
        this.drainLimit = drainLimit;
        this.dispatcher = dispatcher;
        this.kept = kept;
    }

    /** Counts {@code window} as draining; call while the agent lives, then {@link #releaseWhenOver} outside its lock. */
    void add(NixlWindow window) {
        draining.add(window);
    }

    /** Releases {@code window} at its notification, or at its drain limit without it. */
    void releaseWhenOver(NixlWindow window) {
        window.waiter().future.whenComplete((ok, error) -> {
            if (error == null) {
                release(window);
            }
        });
        long limit = drainLimitNanos(drainBaseNanos >= 0 ? drainBaseNanos : drainLimit.toNanos(),
                window.bytes());
        CompletableFuture.delayedExecutor(limit, TimeUnit.NANOSECONDS).execute(() -> {
            if (draining.contains(window)) {
                log.warn("NIXL agent {}: a window of {} bytes closed before its notification got no notification within"
                        + " the drain limit of {} ms; its memory is deregistered but kept allocated until the agent"
                        + " closes, as a stalled peer could still reach it over UCX TCP", agentName, window.bytes(),
                        TimeUnit.NANOSECONDS.toMillis(limit));
                dispatcher.cancel(window.waiter());
                if (draining.remove(window)) {
                    kept.countWindow(window.bytes());
                    window.markReleasedWithoutNotification();
                }
            }
        });
    }

    /** How long a window closed early stays unreleased at most: {@code base} (2 s by default) plus its size at 100 MB/s. */
    static long drainLimitNanos(long base, long bytes) {
        return base + bytes / DRAIN_BYTES_PER_SECOND * TimeUnit.SECONDS.toNanos(1)
                + bytes % DRAIN_BYTES_PER_SECOND * TimeUnit.SECONDS.toNanos(1) / DRAIN_BYTES_PER_SECOND;
    }

    private void release(NixlWindow window) {
        if (draining.remove(window)) {
            window.markReleased();
        }
    }

    /** Releases every window still draining: the agent was destroyed, so no worker is left to touch their memory. */
    void releaseAll() {
        new ArrayList<>(draining).forEach(this::release);
    }

    int count() {
        return draining.size();
    }
}
