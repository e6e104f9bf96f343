package io.nixlconnect.transport.nixl;

import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/** The loop's idle strategy, observed through its thread's state (no timing assertions). */
class ProgressLoopTest {

    private ProgressLoop loop;

    @AfterEach
    void stop() {
        if (loop != null) {
            loop.stop();
        }
    }

    @ParameterizedTest(name = "NIXL progress thread on: {0}")
    @ValueSource(booleans = {false, true})
    void neverParksWhileATransferIsInFlight(boolean nixlThreadProgresses) throws Exception {
        FakeWork work = new FakeWork(true, true);
        Thread thread = start(work, nixlThreadProgresses);
        // Well past the spin window that follows activity (the start counts as activity).
        Thread.sleep(TimeUnit.NANOSECONDS.toMillis(ProgressLoop.SPIN_NANOS) * 20);
        long pollsBefore = work.polls.get();
        // At least 2000 samples, and on until the loop has polled again: on a busy machine it may not get a core
        // for a while, which is no reason to fail; parking is.
        long giveUp = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        for (int i = 0; i < 2000 || (work.polls.get() == pollsBefore && System.nanoTime() < giveUp); i++) {
            assertThat(thread.getState()).as("loop thread state, sample " + i).isEqualTo(Thread.State.RUNNABLE);
            Thread.onSpinWait();
        }
        // Still polling: on a loaded machine the sampling may end before the loop thread next gets a core.
        awaitTrue(() -> work.polls.get() > pollsBefore, "polls after sampling");
        assertThat(thread.getState()).isEqualTo(Thread.State.RUNNABLE);
    }

    @ParameterizedTest(name = "NIXL progress thread on: {0}")
    @ValueSource(booleans = {false, true})
    void parksOnceTheSpinWindowEndsWhenOnlyWindowsWait(boolean nixlThreadProgresses) throws Exception {
        Thread thread = start(new FakeWork(false, true), nixlThreadProgresses);
        awaitParked(thread);
    }

    @ParameterizedTest(name = "NIXL progress thread on: {0}")
    @ValueSource(booleans = {false, true})
    void parksWhenNothingIsPending(boolean nixlThreadProgresses) throws Exception {
        Thread thread = start(new FakeWork(false, false), nixlThreadProgresses);
        awaitParked(thread);
    }

    @Test
    void withNixlsThreadOnAWaitingLoopPausesAQuarterOfTheQuietSpellWithinBounds() {
        assertThat(ProgressLoop.waitingPause(0)).isEqualTo(ProgressLoop.MIN_PARK_NANOS);
        assertThat(ProgressLoop.waitingPause(TimeUnit.MILLISECONDS.toNanos(2)))
                .isEqualTo(TimeUnit.MICROSECONDS.toNanos(500));
        assertThat(ProgressLoop.waitingPause(TimeUnit.SECONDS.toNanos(10)))
                .isEqualTo(ProgressLoop.MAX_WAITING_PARK_NANOS);
        assertThat(ProgressLoop.MAX_WAITING_PARK_NANOS).isLessThan(ProgressLoop.IDLE_PARK_NANOS);
    }

    @Test
    void aFailingPollStopsTheLoopAndReportsTheFailure() throws Exception {
        IllegalStateException boom = new IllegalStateException("boom");
        FakeWork failing = new FakeWork(false, false) {
            @Override
            public int pollOnce() {
                throw boom;
            }
        };
        loop = new ProgressLoop("progress-test", failing, false);
        loop.start();
        assertThatThrownBy(() -> failing.thread.get(5, TimeUnit.SECONDS)).hasCause(boom);
        awaitTrue(() -> !loop.isAlive(), "loop ends after a failure");
    }

    private Thread start(FakeWork work, boolean nixlThreadProgresses) throws Exception {
        loop = new ProgressLoop("progress-test", work, nixlThreadProgresses);
        loop.start();
        return work.thread.get(5, TimeUnit.SECONDS);
    }

    private static void awaitParked(Thread thread) throws InterruptedException {
        awaitTrue(() -> thread.getState() == Thread.State.TIMED_WAITING, "loop parks");
    }

    private static void awaitTrue(BooleanSupplier condition, String what) {
        await().alias(what).atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(1))
                .until(condition::getAsBoolean);
    }

    private static class FakeWork implements ProgressLoop.Work {
        final CompletableFuture<Thread> thread = new CompletableFuture<>();
        final AtomicLong polls = new AtomicLong();
        private final boolean inFlight;
        private final boolean busy;

        FakeWork(boolean inFlight, boolean busy) {
            this.inFlight = inFlight;
            this.busy = busy;
        }

        @Override
        public int pollOnce() {
            thread.complete(Thread.currentThread());
            polls.incrementAndGet();
            return 0;
        }

        @Override
        public boolean busy() {
            return busy;
        }

        @Override
        public boolean transfersInFlight() {
            return inFlight;
        }

        @Override
        public void failed(Throwable error) {
            thread.completeExceptionally(error);
        }
    }
}
