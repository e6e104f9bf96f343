package io.nixlconnect.benchmarks;

import io.nixlconnect.RdmaMetadata;
import java.util.ArrayList;
import java.util.List;

/**
 * The second pass's consumer: the real Python {@code dynamo.nixl_connect} in its own process
 * ({@code interop/dynamo_soak_consumer.py}), reading and writing as a Dynamo worker does. The module keeps no record
 * of spent metadata: a second read with it is tried, and over a window of the producer's registered pool it is served
 * (the producer's memory is still there); what the soak checks is that the producer and its peers stay usable.
 */
final class PythonSoakConsumer implements SoakConsumer {

    private final SoakFigures figures;
    private final SoakChild process;

    PythonSoakConsumer(SoakFigures figures) throws Exception {
        this.figures = figures;
        this.process = SoakChild.python();
        process.next("READY ");
    }

    @Override
    public boolean transfer(RdmaMetadata metadata, boolean read, boolean again) throws Exception {
        process.send((read ? "read " : "write ") + metadata.toJson() + (again ? " again" : ""));
        boolean ok = outcome(null);
        if (again) {
            outcome(read ? "spent metadata read again by the module" : "spent metadata written again by the module");
        }
        return ok;
    }

    /** Counts one "RESULT ok|wrong|failed MICROS [cause]" line; {@code spent}: the cause to count it under. */
    private boolean outcome(String spent) throws Exception {
        figures.operation();
        String line = process.nextOrGone("RESULT ");
        if (line == null) {
            figures.count("PYTHON CONSUMER GONE");
            figures.miss("the Python consumer died or hung (alive: " + process.process.isAlive() + ")");
            throw new IllegalStateException("the Python consumer gave no result");
        }
        String[] words = line.split(" ", 4);
        long nanos = Long.parseLong(words[2]) * 1_000;
        switch (words[1]) {
            case "ok" -> {
                if (spent != null) {
                    figures.count(spent + ": served (expected)");
                } else {
                    figures.succeeded(nanos);
                }
                return true;
            }
            case "wrong" -> {
                figures.count("WRONG BYTES");
                figures.miss("a READ returned wrong bytes: " + line);
                return false;
            }
            default -> {
                String cause = words[3].substring(0, Math.min(110, words[3].length()));
                figures.failed(spent != null ? spent + ": refused (expected) " + cause : cause, nanos);
                return false;
            }
        }
    }

    @Override
    public SoakChild startDoomedReader() throws Exception {
        return SoakChild.python("reader");
    }

    @Override
    public long rssKiB() throws Exception {
        return process.rssKiB();
    }

    /**
     * File descriptors other than sockets. Not its sockets: the module leaves a TCP connection to the producer open per
     * operation (it loads and unloads the producer's agent each time; UCX's TCP endpoints outlive the unload), closed
     * only when the producer exits — a limitation of the module and the libraries below it, which the Java side
     * cannot close, shown in the interval lines and in docs/reliability.md rather than judged.
     */
    @Override
    public long fds() throws Exception {
        return Long.parseLong(process.stats()[6]);
    }

    /** "STATS RSS_KIB ALLOCATED_BLOCKS PEERS REGISTRATIONS_LEFT IN_FLIGHT FDS SOCKETS". */
    @Override
    public String describe() throws Exception {
        String[] stats = process.stats();
        return String.format("Python, heap %s blocks (sys.getallocatedblocks), RSS %s KiB, peers %s, registrations"
                + " left after their operation %s, in flight %s, fds %s besides %s sockets", stats[2], stats[1],
                stats[3], stats[4], stats[5], stats[6], stats[7]);
    }

    @Override
    public List<String> notIdle() throws Exception {
        String[] stats = process.stats();
        List<String> problems = new ArrayList<>();
        if (!stats[3].equals("0") || !stats[4].equals("0") || !stats[5].equals("0")) {
            problems.add("Python consumer not back to idle: peers " + stats[3] + ", registrations left " + stats[4]
                    + ", in flight " + stats[5]);
        }
        return problems;
    }

    @Override
    public String end() throws Exception {
        String stopped = process.stop();
        return stopped == null ? null : "the Python consumer " + stopped;
    }
}
