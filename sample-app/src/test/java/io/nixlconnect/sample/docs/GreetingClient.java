package io.nixlconnect.sample.docs;

import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.autoconfigure.NixlTransfers;
import java.nio.charset.StandardCharsets;
import org.springframework.stereotype.Service;
import org.springframework.web.client.RestClient;

/** docs/getting-started.md, "Read it from another worker": the active side. */
@Service
class GreetingClient {

    private final NixlTransfers transfers;
    private final RestClient.Builder http;

    GreetingClient(NixlTransfers transfers, RestClient.Builder http) {
        this.transfers = transfers;
        this.http = http;
    }

    /** Fetches the peer's metadata over HTTP, then reads its buffer with a one-sided READ. */
    String fetch(String peerUrl) {
        String json = http.build().get().uri(peerUrl + "/greeting/metadata").retrieve().body(String.class);
        RdmaMetadata remote = RdmaMetadata.fromJson(json);
        byte[] bytes = transfers.readBytes(remote); // waits up to nixl.connect.operation-timeout
        return new String(bytes, StandardCharsets.UTF_8);
    }
}
