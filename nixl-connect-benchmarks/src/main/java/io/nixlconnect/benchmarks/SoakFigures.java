package io.nixlconnect.benchmarks;

import io.nixlconnect.transport.nixl.NixlSettings;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What a soak pass counts: operations, failures by cause, latencies, the consumer's footprint after warm-up and per
 * interval, targets missed.
 *
 * <p>The targets a short pass (CI's) judges are the ones machine load cannot move: no crash, no peer left unusable,
 * every failure typed and within its timeout, kept memory within the cap, registrations, peers, operations and file
 * descriptors back to their idle values, and the consumer's growth after warm-up bounded per operation. RSS compared
 * across intervals is judged only in long passes ({@link #LONG_PASS_SECONDS}): over two minutes it measures how the
 * collector and the allocator size themselves under the load of the moment, not a leak (issue 31).
 */
final class SoakFigures {

    /**
     * The consumer's RSS may grow after warm-up by this much whatever the number of operations: code compiled late,
     * the C allocator's arenas for threads that meet under load, UCX's pools reaching their size. Measured on this
     * machine: see docs/reliability.md.
     */
    static final long GROWTH_ALLOWANCE_KIB = 24 << 10;
    /** ...and by this much per operation on top: a leak of a page per operation shows within a few thousand. */
    static final long GROWTH_PER_OPERATION_BYTES = 1024;
    /**
     * File descriptors the consumer may hold after the pass beyond those after warm-up: UCX's sockets to a restarted
     * producer not yet closed. A leak of one per operation exceeds it a hundredfold within seconds.
     */
    static final long FD_ALLOWANCE = 16;
    /** Passes at least this long also compare the consumer's RSS in the last interval with the second. */
    static final long LONG_PASS_SECONDS = 600;

    private final Map<String, Long> failures = new TreeMap<>();
    private final List<Long> latencies = new ArrayList<>();
    private final List<Long> rssPerInterval = new ArrayList<>();
    private final List<String> missed = new ArrayList<>();
    private long operations;
    private long totalOperations;
    private long slowFailures;
    private long maxKeptResident;
    private Footprint warm;

    /** The consumer's process at one moment: resident memory and open file descriptors. */
    record Footprint(long operations, long rssKiB, long fds) {
    }

    void operation() {
        operations++;
        totalOperations++;
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
     * registrations, fds) and the producer's ("STATS heapKiB rssKiB keptResident keptTotal registrationsBeyondPool
     * inFlight"); then starts the next interval's counts.
     */
    void report(int interval, String consumer, long consumerRssKiB, String[] producer) {
        long[] sorted = latencies.stream().mapToLong(Long::longValue).sorted().toArray();
        rssPerInterval.add(consumerRssKiB);
        maxKeptResident = Math.max(maxKeptResident, Long.parseLong(producer[3]));
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

    private static double percentile(long[] sorted, double p) {
        return sorted.length == 0 ? 0 : sorted[Math.min(sorted.length - 1, (int) (p * sorted.length))];
    }

    /** Where growth is measured from: the consumer after warm-up (the first interval). */
    void warmedUp(long rssKiB, long fds) {
        warm = new Footprint(totalOperations, rssKiB, fds);
    }

    /**
     * Judges the consumer at the end, back to idle, against itself after warm-up: file descriptors within
     * {@link #FD_ALLOWANCE}; RSS grown by at most {@link #GROWTH_ALLOWANCE_KIB} plus
     * {@link #GROWTH_PER_OPERATION_BYTES} per operation since. {@code runtimeGrowth}: what the runtime's own accounts
     * say grew (NMT for a JVM), printed to tell the JVM's growth from native memory outside it.
     */
    void judgeGrowth(long rssKiB, long fds, String runtimeGrowth) {
        if (warm == null) {
            System.out.println("growth after warm-up: not measured (the pass ended before its first interval)");
            return;
        }
        long operationsSince = totalOperations - warm.operations();
        long grownKiB = rssKiB - warm.rssKiB();
        long allowedKiB = GROWTH_ALLOWANCE_KIB + operationsSince * GROWTH_PER_OPERATION_BYTES / 1024;
        System.out.printf("growth after warm-up: %d operations; consumer RSS %d -> %d KiB (%+d KiB, %+d bytes per"
                + " operation; allowed %d KiB), file descriptors %d -> %d%s%n", operationsSince, warm.rssKiB(), rssKiB,
                grownKiB, operationsSince == 0 ? 0 : grownKiB * 1024 / operationsSince, allowedKiB, warm.fds(), fds,
                runtimeGrowth.isEmpty() ? "" : "; " + runtimeGrowth);
        if (fds > warm.fds() + FD_ALLOWANCE) {
            missed.add("consumer file descriptors not back to idle: " + fds + " open at the end, " + warm.fds()
                    + " after warm-up (" + (fds - warm.fds()) + " more over " + operationsSince + " operations)");
        }
        if (grownKiB > allowedKiB) {
            missed.add("consumer memory grew with the operations: RSS +" + grownKiB + " KiB over " + operationsSince
                    + " operations after warm-up (" + grownKiB * 1024 / Math.max(1, operationsSince)
                    + " bytes per operation; allowed " + GROWTH_ALLOWANCE_KIB + " KiB + "
                    + GROWTH_PER_OPERATION_BYTES + " bytes per operation)");
        }
    }

    /** The targets this pass's figures decide, added to those missed; prints the verdict and returns it. */
    boolean verdict(long crashes, long passSeconds) {
        if (crashes > 0) {
            missed.add(crashes + " crash(es)");
        }
        if (slowFailures > 0) {
            missed.add(slowFailures + " failed operation(s) ended later than their timeout plus 5 s");
        }
        if (maxKeptResident > NixlSettings.DEFAULT_MAX_KEPT_BYTES) {
            missed.add("producer kept " + maxKeptResident + " bytes resident, over the cap");
        }
        if (passSeconds >= LONG_PASS_SECONDS && rssPerInterval.size() >= 3) {
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
