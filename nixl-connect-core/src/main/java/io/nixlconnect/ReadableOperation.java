package io.nixlconnect;

import java.util.List;

/** Local buffers a peer may read once, with a {@link ReadOperation}; completes when it has. */
public final class ReadableOperation extends PassiveOperation {

    ReadableOperation(Connector connector, List<Descriptor> localDescriptors) {
        super(connector, OperationKind.READ, localDescriptors);
    }
}
