package io.nixlconnect;

import java.util.List;

/**
 * Local buffers peers may read with {@link ReadOperation}s: once (the default, as in Python Dynamo), or by a given
 * number of readers ({@link Connector#createReadable(int, List)}, fan-out). It completes when every expected reader
 * has notified, and releases its registrations then. Each reader is an ordinary read of the same metadata, so
 * Python readers take part unchanged.
 */
public final class ReadableOperation extends PassiveOperation {

    ReadableOperation(Connector connector, List<Descriptor> localDescriptors) {
        this(connector, localDescriptors, 1);
    }

    ReadableOperation(Connector connector, List<Descriptor> localDescriptors, int readers) {
        super(connector, OperationKind.READ, localDescriptors, readers);
    }

    /** How many readers complete this readable: 1 unless created for fan-out. */
    public int readers() {
        return peers();
    }

    /**
     * How many reads have completed (their reader's notification arrived): so far while the readable waits, and
     * in the end — equal to {@link #readers()} once COMPLETE, fewer when it was cancelled or timed out first.
     */
    public int readsCompleted() {
        return peersDone();
    }
}
