package io.nixlconnect.transport.nixl;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static io.nixlconnect.transport.nixl.NixlAgents.key;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Windows closed before their notification, each released once: at its notification, at its drain limit (then
 * without it, its bytes counted as kept), or when the agent is destroyed. The windows belong to a real agent; the
 * drain under test has its own dispatcher, so only the test notifies them.
 */
class WindowDrainTest {

    @RegisterExtension
    final NixlAgents agents = new NixlAgents();
    private NixlAgentCore core;
    private final NotificationDispatcher dispatcher = new NotificationDispatcher(16, 1 << 16);
    private final KeptMemory kept = new KeptMemory("drain-test", 1 << 20);

    @BeforeEach
    void openAgent() {
        core = agents.open("drain-test");
    }

    private NixlWindow window(String key, long bytes) {
        return new NixlWindow(core, dispatcher.await(key(key)), bytes);
    }

    @Test
    void aWindowIsReleasedWhenItsNotificationArrives() throws Exception {
        WindowDrain drain = new WindowDrain("drain-test", Duration.ofMinutes(5), dispatcher, kept);
        NixlWindow window = window("notified", 4096);
        drain.add(window);
        drain.releaseWhenOver(window);
        assertThat(drain.count()).isEqualTo(1);
        assertThat(window.released()).as("the peer may still be reading").isNotDone();

        dispatcher.deliver(key("notified"));
        window.released().get(10, TimeUnit.SECONDS);
        assertThat(window.releasedWithoutNotification()).isFalse();
        assertThat(drain.count()).isZero();
        assertThat(kept.details()).containsEntry("bytesKeptAfterDrainLimit", 0L);
    }

    @Test
    void aWindowNotNotifiedWithinTheDrainLimitIsReleasedWithoutItAndItsBytesCountAsKept() throws Exception {
        WindowDrain drain = new WindowDrain("drain-test", Duration.ofMillis(50), dispatcher, kept);
        NixlWindow window = window("stalled", 4096);
        drain.add(window);
        drain.releaseWhenOver(window);

        window.released().get(10, TimeUnit.SECONDS);
        assertThat(window.releasedWithoutNotification()).isTrue();
        assertThat(drain.count()).isZero();
        assertThat(kept.details()).containsEntry("bytesKeptAfterDrainLimit", 4096L)
                .containsEntry("memoryHeldUntilClose", 0);
        assertThat(dispatcher.waitingCount()).as("its wait for the notification is cancelled").isZero();
    }

    @Test
    void releaseAllReleasesEveryWindowStillDrainingOnce() throws Exception {
        WindowDrain drain = new WindowDrain("drain-test", Duration.ofMinutes(5), dispatcher, kept);
        NixlWindow first = window("first", 1);
        NixlWindow second = window("second", 2);
        for (NixlWindow window : new NixlWindow[] {first, second}) {
            drain.add(window);
            drain.releaseWhenOver(window);
        }

        drain.releaseAll();
        assertThat(first.released()).isCompleted();
        assertThat(second.released()).isCompleted();
        assertThat(first.releasedWithoutNotification()).as("the agent's worker is gone: nothing can reach it").isFalse();
        assertThat(drain.count()).isZero();
        dispatcher.deliver(key("first")); // a late notification changes nothing
        assertThat(drain.count()).isZero();
        assertThat(kept.details()).containsEntry("bytesKeptAfterDrainLimit", 0L);
    }

    @Test
    void theDrainLimitIsItsFixedPartPlusTheWindowsSizeAtOneHundredMegabytesPerSecond() {
        long base = TimeUnit.SECONDS.toNanos(2);
        assertThat(WindowDrain.drainLimitNanos(base, 0)).isEqualTo(base);
        assertThat(WindowDrain.drainLimitNanos(base, 100_000_000L)).isEqualTo(base + TimeUnit.SECONDS.toNanos(1));
        assertThat(WindowDrain.drainLimitNanos(0, 50_000_000L)).isEqualTo(TimeUnit.MILLISECONDS.toNanos(500));
        assertThat(WindowDrain.drainLimitNanos(base, 1L << 30)).isEqualTo(base + 10_737_418_240L);
    }
}
