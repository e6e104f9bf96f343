package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

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
        arm(Duration.ofMillis(2000), () -> {
            expired.add("late");
            both.countDown();
        });
        arm(Duration.ofMillis(20), () -> {
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
        Deadlines.Deadline disarmed = arm(Duration.ofMillis(20), disarmedRuns::incrementAndGet);
        arm(Duration.ofMillis(100), later::countDown);
        deadlines.disarm(disarmed);

        assertThat(later.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(disarmedRuns).hasValue(0);
    }

    @Test
    void manyArmedDeadlinesShareOneTimerTask() {
        for (int i = 0; i < 1000; i++) {
            arm(Duration.ofMinutes(10).plusMillis(i), () -> { });
        }

        // One task per deadline would signal the timer thread on every operation.
        assertThat(timer.getQueue()).hasSize(1);
        assertThat(deadlines.armedCount()).isEqualTo(1000);
    }

    @Test
    void anEarlierDeadlineReplacesThePendingTask() throws InterruptedException {
        arm(Duration.ofMinutes(10), () -> { });
        CountDownLatch early = new CountDownLatch(1);
        arm(Duration.ofMillis(20), early::countDown);

        assertThat(timer.getQueue()).hasSize(1);
        assertThat(early.await(10, TimeUnit.SECONDS)).isTrue();
        // Re-armed for the ten-minute deadline that is still open.
        assertThat(deadlines.armedCount()).isEqualTo(1);
        assertThat(timer.getQueue()).hasSize(1);
    }

    @Test
    void anExpiryThatThrowsDoesNotStopTheOthers() throws InterruptedException {
        CountDownLatch second = new CountDownLatch(1);
        arm(Duration.ofMillis(10), () -> {
            throw new IllegalStateException("expiry failed");
        });
        arm(Duration.ofMillis(30), second::countDown);

        assertThat(second.await(10, TimeUnit.SECONDS)).isTrue();
    }

    @Test
    void aHugeLimitIsAcceptedAndLeavesTheTimerIdle() {
        arm(Duration.ofSeconds(Long.MAX_VALUE), () -> { });

        assertThat(deadlines.armedCount()).isEqualTo(1);
        assertThat(timer.getQueue()).hasSize(1);
        assertThat(((Delayed) timer.getQueue().peek()).getDelay(TimeUnit.DAYS)).isGreaterThan(365L * 100);
    }

    @Test
    void aDisarmedDeadlineMayBeArmedAgainButNotTwiceAtOnce() throws InterruptedException {
        CountDownLatch expired = new CountDownLatch(1);
        Deadlines.Deadline deadline = arm(Duration.ofMinutes(10), expired::countDown);
        assertThatThrownBy(() -> deadlines.arm(deadline, Duration.ofMillis(1))).isInstanceOf(IllegalStateException.class);
        deadlines.disarm(deadline);
        deadlines.disarm(deadline); // harmless
        assertThat(deadlines.armedCount()).isZero();

        deadlines.arm(deadline, Duration.ofMillis(10));

        assertThat(expired.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(deadlines.armedCount()).isZero();
    }

    @Test
    void disarmingInTheMiddleKeepsTheOthersLinked() throws InterruptedException {
        CountDownLatch kept = new CountDownLatch(2);
        AtomicInteger disarmedRuns = new AtomicInteger();
        // Long enough that none expires before the count below is read, on a loaded machine too (10 ms did once).
        arm(Duration.ofMillis(1500), kept::countDown);
        Deadlines.Deadline middle = arm(Duration.ofMillis(1250), disarmedRuns::incrementAndGet);
        arm(Duration.ofMillis(1000), kept::countDown);
        deadlines.disarm(middle);

        assertThat(deadlines.armedCount()).isEqualTo(2);
        assertThat(kept.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(disarmedRuns).hasValue(0);
        assertThat(deadlines.armedCount()).isZero();
    }

    @Test
    void armingAfterTheTimerStoppedDoesNotThrow() {
        timer.shutdownNow();

        arm(Duration.ofMillis(1), () -> { });

        assertThat(deadlines.armedCount()).isEqualTo(1);
    }

    /** Arms a deadline that runs {@code expiry}. */
    private Deadlines.Deadline arm(Duration limit, Runnable expiry) {
        Deadlines.Deadline deadline = new Deadlines.Deadline(expiry);
        deadlines.arm(deadline, limit);
        return deadline;
    }

    private void awaitNoTimerTask() {
        await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(5)).until(() -> timer.getQueue().isEmpty());
    }
}
