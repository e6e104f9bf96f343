package io.nixlconnect;

import java.util.List;

/** Reads a peer's {@link ReadableOperation} into local buffers. */
public final class ReadOperation extends ActiveOperation {

    ReadOperation(Connector connector, RdmaMetadata remoteMetadata, List<Descriptor> localDescriptors) {
        super(connector, OperationKind.READ, remoteMetadata, localDescriptors);
    }

    /**
     * The local descriptors, now holding the peer's bytes.
     *
     * @throws IllegalStateException before the operation has completed
     */
    public List<Descriptor> results() {
        if (status() != OperationStatus.COMPLETE) {
            throw new IllegalStateException("Operation has not completed yet, cannot get results (status " + status() + ").");
        }
        return localDescriptors();
    }
}
