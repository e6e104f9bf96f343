package io.nixlconnect.benchmarks;

import io.nixlconnect.transport.nixl.NixlSettings;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** What a soak pass counts: operations, failures by cause, latencies, the consumer's RSS per interval, targets missed. */
final class SoakFigures {

    private final Map<String, Long> failures = new TreeMap<>();
    private final List<Long> latencies = new ArrayList<>();
    private final List<Long> rssPerInterval = new ArrayList<>();
    private final List<String> missed = new ArrayList<>();
    private long operations;
    private long slowFailures;

    void operation() {
        operations++;
    }

    void succeeded(long nanos) {
        latencies.add(nanos);
    }

    /** A failed operation that took {@code nanos}: counted by cause, and as slow past its timeout plus 5 s. */
    void failed(String cause, long nanos) {
        if (nanos > NixlSoak.TIMEOUT.plusSeconds(5).toNanos()) {
            slowFailures++;
        }
        count(cause);
    }

    void count(String cause) {
        failures.merge(cause, 1L, Long::sum);
    }

    void miss(String target) {
        missed.add(target);
    }

    /**
     * Prints one interval: operations, failures by cause, p50/p99, the consumer's line (heap, RSS, peers,
     * registrations) and the producer's ("STATS heapKiB rssKiB keptResident keptTotal registrationsBeyondPool
     * inFlight"); then starts the next interval's counts.
     */
    void report(int interval, String consumer, long consumerRssKiB, String[] producer) {
        long[] sorted = latencies.stream().mapToLong(Long::longValue).sorted().toArray();
        rssPerInterval.add(consumerRssKiB);
        System.out.printf("interval %d: %d operations, p50 %.2f ms, p99 %.2f ms; failures %s%n", interval, operations,
                percentile(sorted, 0.50) / 1e6, percentile(sorted, 0.99) / 1e6, failures);
        System.out.println("  consumer: " + consumer);
        System.out.printf("  producer: heap %s KiB, RSS %s KiB, kept %s bytes (%s resident, cap %d), registrations"
                + " beyond its pool %s, in flight %s%n", producer[1], producer[2], producer[4], producer[3],
                NixlSettings.DEFAULT_MAX_KEPT_BYTES, producer[5], producer[6]);
        operations = 0;
        latencies.clear();
        failures.clear();
    }

    static double percentile(long[] sorted, double p) {
        return sorted.length == 0 ? 0 : sorted[Math.min(sorted.length - 1, (int) (p * sorted.length))];
    }

    /** The targets this pass's figures decide, added to those missed; prints the verdict and returns it. */
    boolean verdict(long crashes) {
        if (crashes > 0) {
            missed.add(crashes + " crash(es)");
        }
        if (slowFailures > 0) {
            missed.add(slowFailures + " failed operation(s) ended later than their timeout plus 5 s");
        }
        if (rssPerInterval.size() >= 3) {
            long second = rssPerInterval.get(1);
            long last = rssPerInterval.get(rssPerInterval.size() - 1);
            if (last > second * 1.1) {
                missed.add("consumer RSS grew: " + second + " KiB in the second interval, " + last + " KiB in the last");
            }
        }
        System.out.println(missed.isEmpty() ? "soak: every target met (0 crash logs in " + SoakChild.CRASH_DIR + ")"
                : "soak: MISSED " + missed);
        return missed.isEmpty();
    }
}
