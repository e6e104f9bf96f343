package io.nixlconnect.sample.docs;

import io.nixlconnect.ReadableOperation;
import io.nixlconnect.autoconfigure.NixlTransfers;
import java.nio.charset.StandardCharsets;
import org.springframework.http.MediaType;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/** docs/getting-started.md, "Publish a buffer": the passive side. Compiled and tested here so the guide stays true. */
@RestController
class GreetingController {

    private final NixlTransfers transfers;

    GreetingController(NixlTransfers transfers) {
        this.transfers = transfers;
    }

    /** Publishes a buffer for one READ by a peer; the body is the RdmaMetadata JSON, as Python Dynamo sends it. */
    @GetMapping(path = "/greeting/metadata", produces = MediaType.APPLICATION_JSON_VALUE)
    String metadata() {
        ReadableOperation readable = transfers.publish("hello from nixl-connect".getBytes(StandardCharsets.UTF_8));
        return readable.metadata().toJson();
    }
}
