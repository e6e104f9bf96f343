package io.nixlconnect.transport.nixl;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/** The loop's idle strategy, observed through its thread's state (no timing assertions). */
class ProgressLoopTest {

    private ProgressLoop loop;

    @AfterEach
    void stop() {
        if (loop != null) {
            loop.stop();
        }
    }

    @Test
    void neverParksWhileATransferIsInFlight() throws Exception {
        FakeWork work = new FakeWork(true, true);
        Thread thread = start(work);
        // Well past the spin window that follows activity (the start counts as activity).
        Thread.sleep(TimeUnit.NANOSECONDS.toMillis(ProgressLoop.SPIN_NANOS) * 20);
        long pollsBefore = work.polls.get();
        for (int i = 0; i < 2000; i++) {
            assertThat(thread.getState()).as("loop thread state, sample " + i).isEqualTo(Thread.State.RUNNABLE);
            Thread.onSpinWait();
        }
        assertThat(work.polls.get()).as("polls while sampling").isGreaterThan(pollsBefore);
    }

    @Test
    void parksOnceTheSpinWindowEndsWhenOnlyWindowsWait() throws Exception {
        Thread thread = start(new FakeWork(false, true));
        awaitParked(thread);
    }

    @Test
    void parksWhenNothingIsPending() throws Exception {
        Thread thread = start(new FakeWork(false, false));
        awaitParked(thread);
    }

    @Test
    void aFailingPollStopsTheLoopAndReportsTheFailure() throws Exception {
        IllegalStateException boom = new IllegalStateException("boom");
        CompletableFuture<Throwable> reported = new CompletableFuture<>();
        loop = new ProgressLoop("progress-test", new ProgressLoop.Work() {
            @Override
            public int pollOnce() {
                throw boom;
            }

            @Override
            public boolean busy() {
                return false;
            }

            @Override
            public boolean transfersInFlight() {
                return false;
            }

            @Override
            public void failed(Throwable error) {
                reported.complete(error);
            }
        });
        loop.start();
        assertThat(reported.get(5, TimeUnit.SECONDS)).isSameAs(boom);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (loop.isAlive()) {
            assertThat(System.nanoTime()).as("loop ends after a failure").isLessThan(deadline);
            Thread.sleep(1);
        }
    }

    private Thread start(FakeWork work) throws Exception {
        loop = new ProgressLoop("progress-test", work);
        loop.start();
        return work.thread.get(5, TimeUnit.SECONDS);
    }

    private static void awaitParked(Thread thread) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (thread.getState() != Thread.State.TIMED_WAITING) {
            assertThat(System.nanoTime()).as("loop parks within 5 s").isLessThan(deadline);
            Thread.sleep(1);
        }
    }

    private static final class FakeWork implements ProgressLoop.Work {
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
