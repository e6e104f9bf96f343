package io.nixlconnect.autoconfigure.web;

import static org.assertj.core.api.Assertions.assertThat;

import io.nixlconnect.TransferException;
import io.nixlconnect.TransferTimeoutException;
import io.nixlconnect.TransportFailureException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The stack-trace rate limit, on a clock the test moves. */
class StackTraceRateLimitTests {

    private final AtomicLong now = new AtomicLong(-5); // nanoTime may be negative
    private final StackTraceRateLimit limit = new StackTraceRateLimit(Duration.ofSeconds(60), now::get);

    @Test
    void theFirstOfATypeAndThenOnePerIntervalGetAStackTrace() {
        assertThat(limit.next(TransferException.class)).isEqualTo(new StackTraceRateLimit.Verdict(true, 0));
        assertThat(limit.next(TransferException.class)).isEqualTo(new StackTraceRateLimit.Verdict(false, 1));
        now.addAndGet(Duration.ofSeconds(60).toNanos() - 1);
        assertThat(limit.next(TransferException.class)).isEqualTo(new StackTraceRateLimit.Verdict(false, 2));

        now.incrementAndGet(); // one interval after the last stack trace
        assertThat(limit.next(TransferException.class)).as("reports the two without")
                .isEqualTo(new StackTraceRateLimit.Verdict(true, 2));
        assertThat(limit.next(TransferException.class)).as("counted afresh")
                .isEqualTo(new StackTraceRateLimit.Verdict(false, 1));

        now.addAndGet(Duration.ofHours(1).toNanos());
        assertThat(limit.next(TransferException.class)).isEqualTo(new StackTraceRateLimit.Verdict(true, 1));
        assertThat(limit.next(TransferException.class)).isEqualTo(new StackTraceRateLimit.Verdict(false, 1));
    }

    @Test
    void eachTypeHasItsOwnInterval() {
        assertThat(limit.next(TransferException.class).withStackTrace()).isTrue();
        assertThat(limit.next(TransferException.class).withStackTrace()).isFalse();
        // a subclass is a type of its own: a timeout after a failure still shows where it came from
        assertThat(limit.next(TransferTimeoutException.class).withStackTrace()).isTrue();
        assertThat(limit.next(TransportFailureException.class).withStackTrace()).isTrue();
        assertThat(limit.next(TransportFailureException.class)).isEqualTo(new StackTraceRateLimit.Verdict(false, 1));
        assertThat(limit.next(TransferException.class)).isEqualTo(new StackTraceRateLimit.Verdict(false, 2));
    }

    @Test
    void anIntervalOfZeroLogsEveryStackTrace() {
        StackTraceRateLimit every = new StackTraceRateLimit(Duration.ZERO, now::get);
        assertThat(every.next(TransferException.class)).isEqualTo(new StackTraceRateLimit.Verdict(true, 0));
        assertThat(every.next(TransferException.class)).isEqualTo(new StackTraceRateLimit.Verdict(true, 0));
    }
}
