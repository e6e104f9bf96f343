package io.nixlconnect.benchmarks;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * What a fleet run counts per interval and in all: reads, their latencies, failures by cause (expected: the read's
 * producer was going away before it failed; unexpected: anything else), publishes refused, restarts.
 */
final class FleetFigures {

    /** A read whose bytes were not the producer's: never expected. */
    static final String WRONG_BYTES = "WRONG BYTES";
    /** A failure that is not a typed {@code NixlConnectException}: never expected. */
    static final String UNTYPED = "UNTYPED";

    private final Map<String, Long> expected = new TreeMap<>();
    private final Map<String, Long> unexpected = new TreeMap<>();
    private final Map<String, Long> totalExpected = new TreeMap<>();
    private final Map<String, Long> totalUnexpected = new TreeMap<>();
    private final List<Long> latencies = new ArrayList<>();
    private long reads;
    private long totalReads;
    private long connectorRestarts;
    private long jvmRestarts;
    private long totalConnectorRestarts;
    private long totalJvmRestarts;

    synchronized void succeeded(long nanos) {
        reads++;
        totalReads++;
        latencies.add(nanos);
    }

    /** A failure (of a read or of its publish), expected or not; its cause as {@link #cause} made it. */
    synchronized void failed(String cause, boolean isExpected) {
        reads++;
        totalReads++;
        if (isExpected && !cause.startsWith(WRONG_BYTES) && !cause.startsWith(UNTYPED)) {
            expected.merge(cause, 1L, Long::sum);
            totalExpected.merge(cause, 1L, Long::sum);
        } else {
            unexpected.merge(cause, 1L, Long::sum);
            totalUnexpected.merge(cause, 1L, Long::sum);
        }
    }

    synchronized void restarted(boolean wholeJvm) {
        if (wholeJvm) {
            jvmRestarts++;
            totalJvmRestarts++;
        } else {
            connectorRestarts++;
            totalConnectorRestarts++;
        }
    }

    /** This interval's line (reads, p50/p99, failures, restarts); starts the next interval's counts. */
    synchronized String interval() {
        long[] sorted = latencies.stream().mapToLong(Long::longValue).sorted().toArray();
        String line = String.format(Locale.ROOT, "%d reads (%d ok), p50 %.2f ms, p99 %.2f ms; restarts: %d connectors,"
                + " %d JVMs; expected failures %s; UNEXPECTED %s", reads, sorted.length,
                SoakFigures.percentile(sorted, 0.50) / 1e6, SoakFigures.percentile(sorted, 0.99) / 1e6,
                connectorRestarts, jvmRestarts, expected, unexpected);
        reads = 0;
        latencies.clear();
        expected.clear();
        unexpected.clear();
        connectorRestarts = 0;
        jvmRestarts = 0;
        return line;
    }

    synchronized long totalReads() {
        return totalReads;
    }

    synchronized long totalConnectorRestarts() {
        return totalConnectorRestarts;
    }

    synchronized long totalJvmRestarts() {
        return totalJvmRestarts;
    }

    synchronized Map<String, Long> totalExpected() {
        return new TreeMap<>(totalExpected);
    }

    synchronized Map<String, Long> totalUnexpected() {
        return new TreeMap<>(totalUnexpected);
    }

    /**
     * A failure's cause, short and the same for the same cause: its class and message, with agent names, addresses,
     * ports and other numbers replaced, at most 200 characters.
     */
    static String cause(Throwable e) {
        String message = String.valueOf(e.getMessage())
                .replaceAll("fleet-[A-Za-z0-9-]+", "<agent>")
                .replaceAll("\\b(0x)?[0-9a-fA-F]*[0-9][0-9a-fA-F]*\\b", "#")
                .replace('\n', ' ');
        String cause = e.getClass().getSimpleName() + ": " + message;
        return cause.length() > 200 ? cause.substring(0, 200) : cause;
    }
}
