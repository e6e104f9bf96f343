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

    /** One line for the interval report: heap, RSS, loaded peers, registrations, transfers in flight. */
    String describe() throws Exception;

    /** After the pass: what is not back to its idle value (empty when all is). */
    List<String> notIdle() throws Exception;

    /** Ends the consumer; null when it ended cleanly, else what went wrong (a crash). */
    String end() throws Exception;
}
