package io.nixlconnect.benchmarks;

import io.nixlconnect.RdmaMetadata;
import java.util.List;

/** Who reads and writes the producer's windows in a soak pass: this JVM, or the real Python dynamo.nixl_connect. */
interface SoakConsumer {

    /**
     * A READ or WRITE of the window {@code metadata} describes, into or from distinct random blocks, counted in the
     * pass's figures; {@code again}: then the same metadata once more (spent). Returns whether the first succeeded.
     */
    boolean transfer(RdmaMetadata metadata, boolean read, boolean again) throws Exception;

    /** A new process of this kind that reads a window when told and is then killed or stopped; not yet READY. */
    SoakChild startDoomedReader() throws Exception;

    long rssKiB() throws Exception;

    /** File descriptors the consumer's process holds open. */
    long fds() throws Exception;

    /** Called once warmed up, where growth is measured from (the Java consumer takes its JVM's NMT baseline). */
    default void warmedUp() throws Exception {
    }

    /** What the runtime's own accounts say grew since {@link #warmedUp()} (none where they say nothing). */
    default RuntimeGrowth runtimeGrowth() throws Exception {
        return RuntimeGrowth.NONE;
    }

    /** Live heap after a full collection, KiB; -1 where the consumer has no heap of its own to measure so. */
    default long liveHeapKiB() throws Exception {
        return -1;
    }

    /**
     * What the runtime's accounts say grew: {@code report}, a line for the report (empty: nothing known);
     * {@code compilerKiB}, the part that grows with the machine's load rather than with the operations (a JVM's
     * just-in-time compiler: code and its arenas, compiled later the busier the machine).
     */
    record RuntimeGrowth(String report, long compilerKiB) {
        static final RuntimeGrowth NONE = new RuntimeGrowth("", 0);
    }

    /** One line for the interval report: heap, RSS, loaded peers, registrations, transfers in flight. */
    String describe() throws Exception;

    /** After the pass: what is not back to its idle value (empty when all is). */
    List<String> notIdle() throws Exception;

    /** Ends the consumer; null when it ended cleanly, else what went wrong (a crash). */
    String end() throws Exception;
}
