package io.nixlconnect;

import java.util.List;

/** Local buffers a peer may write once, with a {@link WriteOperation}; completes when it has. */
public final class WritableOperation extends PassiveOperation {

    WritableOperation(Connector connector, List<Descriptor> localDescriptors) {
        super(connector, OperationKind.WRITE, localDescriptors);
    }
}
