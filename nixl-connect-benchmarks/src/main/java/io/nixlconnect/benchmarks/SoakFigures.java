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
     * The consumer's RSS may grow after warm-up by this much whatever the number of operations (less what its runtime
     * says its just-in-time compiler took): the C allocator's arenas for threads that meet under load, UCX's pools
     * reaching their size. Measured on this machine: docs/reliability.md.
     */
    static final long GROWTH_ALLOWANCE_KIB = 16 << 10;
    /** ...and by this much per operation on top: a leak of a page per operation shows within a few thousand. */
    static final long GROWTH_PER_OPERATION_BYTES = 1024;
    /** The consumer's live heap (after a full collection) may grow after warm-up by this much... */
    static final long HEAP_ALLOWANCE_KIB = 8 << 10;
    /** ...and by this much per operation: an object of a few hundred bytes kept per operation shows. */
    static final long HEAP_PER_OPERATION_BYTES = 256;
    /**
     * File descriptors the consumer may hold after the pass beyond those after warm-up: a spare reader's pipes, UCX's
     * sockets to a restarted producer not yet closed. A leak of one per operation exceeds it a hundredfold.
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

    /** The consumer's process at one moment: resident memory, open file descriptors, live heap (-1: none). */
    record Footprint(long operations, long rssKiB, long fds, long liveHeapKiB) {
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
     * inFlight fds peers"); then starts the next interval's counts.
     */
    void report(int interval, String consumer, long consumerRssKiB, String[] producer) {
        long[] sorted = latencies.stream().mapToLong(Long::longValue).sorted().toArray();
        rssPerInterval.add(consumerRssKiB);
        maxKeptResident = Math.max(maxKeptResident, Long.parseLong(producer[3]));
        System.out.printf("interval %d: %d operations, p50 %.2f ms, p99 %.2f ms; failures %s%n", interval, operations,
                percentile(sorted, 0.50) / 1e6, percentile(sorted, 0.99) / 1e6, failures);
        System.out.println("  consumer: " + consumer);
        System.out.printf("  producer: heap %s KiB, RSS %s KiB, kept %s bytes (%s resident, cap %d), registrations"
                + " beyond its pool %s, in flight %s, fds %s, peers %s%n", producer[1], producer[2], producer[4],
                producer[3], NixlSettings.DEFAULT_MAX_KEPT_BYTES, producer[5], producer[6], producer[7], producer[8]);
        operations = 0;
        latencies.clear();
        failures.clear();
    }

    static double percentile(long[] sorted, double p) {
        return sorted.length == 0 ? 0 : sorted[Math.min(sorted.length - 1, (int) (p * sorted.length))];
    }

    /** Where growth is measured from: the consumer after warm-up (the first interval). */
    void warmedUp(long rssKiB, long fds, long liveHeapKiB) {
        warm = new Footprint(totalOperations, rssKiB, fds, liveHeapKiB);
    }

    /**
     * Judges the consumer at the end, back to idle, against itself after warm-up, so that neither the pass's length
     * nor the machine's load moves the verdict: file descriptors within {@link #FD_ALLOWANCE}; RSS, less what the
     * runtime says its compiler took ({@code runtime}), grown by at most {@link #GROWTH_ALLOWANCE_KIB} plus
     * {@link #GROWTH_PER_OPERATION_BYTES} per operation since; the live heap by at most {@link #HEAP_ALLOWANCE_KIB}
     * plus {@link #HEAP_PER_OPERATION_BYTES} per operation. The heaps are fixed and touched at start, so RSS does not
     * follow the collector's sizing.
     */
    void judgeGrowth(Footprint end, SoakConsumer.RuntimeGrowth runtime) {
        if (warm == null) {
            System.out.println("growth after warm-up: not measured (the pass ended before its first interval)");
            return;
        }
        long operationsSince = end.operations() - warm.operations();
        long perOperation = Math.max(1, operationsSince);
        long grownKiB = end.rssKiB() - warm.rssKiB() - runtime.compilerKiB();
        long allowedKiB = GROWTH_ALLOWANCE_KIB + operationsSince * GROWTH_PER_OPERATION_BYTES / 1024;
        long heapGrownKiB = end.liveHeapKiB() - warm.liveHeapKiB();
        long heapAllowedKiB = HEAP_ALLOWANCE_KIB + operationsSince * HEAP_PER_OPERATION_BYTES / 1024;
        boolean heap = warm.liveHeapKiB() >= 0 && end.liveHeapKiB() >= 0;
        System.out.printf("growth after warm-up, over %d operations: consumer RSS %d -> %d KiB, %+d KiB besides the"
                + " compiler's %d KiB (%+d bytes per operation; allowed %d KiB)%s; file descriptors %d -> %d%s%n",
                operationsSince, warm.rssKiB(), end.rssKiB(), grownKiB, runtime.compilerKiB(),
                grownKiB * 1024 / perOperation, allowedKiB,
                heap ? String.format("; live heap %d -> %d KiB (%+d bytes per operation; allowed %d KiB)",
                        warm.liveHeapKiB(), end.liveHeapKiB(), heapGrownKiB * 1024 / perOperation, heapAllowedKiB) : "",
                warm.fds(), end.fds(), runtime.report().isEmpty() ? "" : "; " + runtime.report());
        if (end.fds() > warm.fds() + FD_ALLOWANCE) {
            missed.add("consumer file descriptors not back to idle: " + end.fds() + " open at the end, " + warm.fds()
                    + " after warm-up (" + (end.fds() - warm.fds()) + " more over " + operationsSince + " operations)");
        }
        if (grownKiB > allowedKiB) {
            missed.add("consumer memory grew with the operations: RSS +" + grownKiB + " KiB (besides the compiler's) over "
                    + operationsSince + " operations after warm-up, " + grownKiB * 1024 / perOperation
                    + " bytes per operation; allowed " + GROWTH_ALLOWANCE_KIB + " KiB + " + GROWTH_PER_OPERATION_BYTES
                    + " bytes per operation");
        }
        if (heap && heapGrownKiB > heapAllowedKiB) {
            missed.add("consumer heap grew with the operations: live heap +" + heapGrownKiB + " KiB over "
                    + operationsSince + " operations after warm-up, " + heapGrownKiB * 1024 / perOperation
                    + " bytes per operation; allowed " + HEAP_ALLOWANCE_KIB + " KiB + " + HEAP_PER_OPERATION_BYTES
                    + " bytes per operation");
        }
    }

    long operations() {
        return totalOperations;
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
