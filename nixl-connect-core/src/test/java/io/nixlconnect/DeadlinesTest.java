package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Delayed;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class DeadlinesTest {

    private final ScheduledThreadPoolExecutor timer = new ScheduledThreadPoolExecutor(1);
    private final Deadlines deadlines = new Deadlines(timer);

    DeadlinesTest() {
        timer.setRemoveOnCancelPolicy(true);
    }

    @AfterEach
    void stopTimer() {
        timer.shutdownNow();
    }

    @Test
    void expiresWhatIsDueInDeadlineOrder() throws InterruptedException {
        List<String> expired = new CopyOnWriteArrayList<>();
        CountDownLatch both = new CountDownLatch(2);
        // Far apart, so that a stalled test thread (a busy CI machine) cannot arm "early" after "late" is due.
        deadlines.arm(Duration.ofMillis(2000), () -> {
            expired.add("late");
            both.countDown();
        });
        deadlines.arm(Duration.ofMillis(20), () -> {
            expired.add("early");
            both.countDown();
        });

        assertThat(both.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(expired).containsExactly("early", "late");
        assertThat(deadlines.armedCount()).isZero();
        awaitNoTimerTask();
    }

    @Test
    void aDisarmedDeadlineNeverExpires() throws InterruptedException {
        AtomicInteger disarmedRuns = new AtomicInteger();
        CountDownLatch later = new CountDownLatch(1);
        Deadlines.Deadline disarmed = deadlines.arm(Duration.ofMillis(20), disarmedRuns::incrementAndGet);
        deadlines.arm(Duration.ofMillis(100), later::countDown);
        deadlines.disarm(disarmed);

        assertThat(later.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(disarmedRuns).hasValue(0);
    }

    @Test
    void manyArmedDeadlinesShareOneTimerTask() {
        for (int i = 0; i < 1000; i++) {
            deadlines.arm(Duration.ofMinutes(10).plusMillis(i), () -> { });
        }

        // One task per deadline would signal the timer thread on every operation.
        assertThat(timer.getQueue()).hasSize(1);
        assertThat(deadlines.armedCount()).isEqualTo(1000);
    }

    @Test
    void anEarlierDeadlineReplacesThePendingTask() throws InterruptedException {
        deadlines.arm(Duration.ofMinutes(10), () -> { });
        CountDownLatch early = new CountDownLatch(1);
        deadlines.arm(Duration.ofMillis(20), early::countDown);

        assertThat(timer.getQueue()).hasSize(1);
        assertThat(early.await(10, TimeUnit.SECONDS)).isTrue();
        // Re-armed for the ten-minute deadline that is still open.
        assertThat(deadlines.armedCount()).isEqualTo(1);
        assertThat(timer.getQueue()).hasSize(1);
    }

    @Test
    void anExpiryThatThrowsDoesNotStopTheOthers() throws InterruptedException {
        CountDownLatch second = new CountDownLatch(1);
        deadlines.arm(Duration.ofMillis(10), () -> {
            throw new IllegalStateException("expiry failed");
        });
        deadlines.arm(Duration.ofMillis(30), second::countDown);

        assertThat(second.await(10, TimeUnit.SECONDS)).isTrue();
    }

    @Test
    void aHugeLimitIsAcceptedAndLeavesTheTimerIdle() {
        deadlines.arm(Duration.ofSeconds(Long.MAX_VALUE), () -> { });

        assertThat(deadlines.armedCount()).isEqualTo(1);
        assertThat(timer.getQueue()).hasSize(1);
        assertThat(((Delayed) timer.getQueue().peek()).getDelay(TimeUnit.DAYS)).isGreaterThan(365L * 100);
    }

    @Test
    void armingAfterTheTimerStoppedDoesNotThrow() {
        timer.shutdownNow();

        deadlines.arm(Duration.ofMillis(1), () -> { });

        assertThat(deadlines.armedCount()).isEqualTo(1);
    }

    private void awaitNoTimerTask() throws InterruptedException {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!timer.getQueue().isEmpty() && System.nanoTime() < until) {
            Thread.sleep(5);
        }
        assertThat(timer.getQueue()).isEmpty();
    }
}
