package io.nixlconnect.transport.nixl;

import java.time.Duration;

/** Lets cross-process tests in other packages shorten the NIXL drain limit's fixed part in a child JVM. */
public final class NixlDrainLimitForTests {

    private NixlDrainLimitForTests() {
    }

    public static void setBase(Duration base) {
        NixlAgentCore.drainBaseNanos = base.toNanos();
    }
}
