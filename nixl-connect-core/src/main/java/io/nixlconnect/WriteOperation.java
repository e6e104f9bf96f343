package io.nixlconnect;

import java.util.List;

/** Writes local buffers into a peer's {@link WritableOperation}. */
public final class WriteOperation extends ActiveOperation {

    WriteOperation(Connector connector, List<Descriptor> localDescriptors, RdmaMetadata remoteMetadata) {
        super(connector, OperationKind.WRITE, remoteMetadata, localDescriptors);
    }
}
