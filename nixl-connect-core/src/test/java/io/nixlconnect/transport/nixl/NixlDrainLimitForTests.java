package io.nixlconnect.transport.nixl;

import java.time.Duration;

/** Lets cross-process tests in other packages shorten the NIXL drain limit's fixed part in a child JVM. */
public final class NixlDrainLimitForTests {

    private NixlDrainLimitForTests() {
    }

    /** Sets the fixed part of the drain limit; returns the one it replaces, to restore. */
    public static Duration setBase(Duration base) {
        Duration previous = Duration.ofNanos(WindowDrain.drainBaseNanos);
        WindowDrain.drainBaseNanos = base.toNanos();
        return previous;
    }
}
