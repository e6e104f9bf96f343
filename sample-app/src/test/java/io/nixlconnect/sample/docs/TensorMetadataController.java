package io.nixlconnect.sample.docs;

import io.nixlconnect.Connector;
import io.nixlconnect.Descriptor;
import io.nixlconnect.ReadableOperation;
import java.nio.ByteBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.http.MediaType;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/** docs/getting-started.md, "Who closes what": memory the controller owns, freed through completion(). */
@RestController
class TensorMetadataController {

    private static final Logger log = LoggerFactory.getLogger(TensorMetadataController.class);
    static final int size = 4096;

    private final Connector connector;

    TensorMetadataController(Connector connector) {
        this.connector = connector;
    }

    @GetMapping(path = "/tensor/metadata", produces = MediaType.APPLICATION_JSON_VALUE)
    String tensorMetadata() {
        Descriptor tensor = Descriptor.allocate(size);   // owned here: freed when the peer is done with it
        ReadableOperation readable;
        try {
            fill(tensor.asByteBuffer(0, size));
            readable = connector.createReadable(tensor);
        } catch (RuntimeException e) {
            tensor.close();
            throw e;
        }
        readable.completion().whenComplete((ignored, failure) -> {
            // Runs once the operation has ended (read, timed out, or cancelled) and released the descriptor.
            if (failure != null) {
                log.warn("tensor not read: {}", failure.getMessage());
            }
            tensor.close();
        });
        return readable.metadata().toJson();
    }

    static void fill(ByteBuffer buffer) {
        for (int i = 0; buffer.hasRemaining(); i++) {
            buffer.put((byte) i);
        }
    }
}
