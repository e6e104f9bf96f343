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

    /** What the runtime's own accounts say grew since {@link #warmedUp()}, for the report; empty if they say nothing. */
    default String runtimeGrowth() throws Exception {
        return "";
    }

    /** One line for the interval report: heap, RSS, loaded peers, registrations, transfers in flight. */
    String describe() throws Exception;

    /** After the pass: what is not back to its idle value (empty when all is). */
    List<String> notIdle() throws Exception;

    /** Ends the consumer; null when it ended cleanly, else what went wrong (a crash). */
    String end() throws Exception;
}
