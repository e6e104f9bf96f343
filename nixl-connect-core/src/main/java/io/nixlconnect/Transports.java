package io.nixlconnect;

import io.nixlconnect.transport.Transport;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import io.nixlconnect.transport.embedded.EmbeddedTransport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Chooses and opens the transport a connector's options ask for. */
final class Transports {

    private static final Logger log = LoggerFactory.getLogger(Transports.class);

    private Transports() {
    }

    static Transport open(ConnectorOptions options) {
        return switch (options.backend()) {
            case EMBEDDED -> embedded(options);
            case NIXL -> throw new IllegalStateException("The NIXL backend is not available in this build");
            case AUTO -> {
                log.info("nixl-connect: backend 'auto' chose the embedded transport (the NIXL backend is not available in this build)");
                yield embedded(options);
            }
        };
    }

    private static Transport embedded(ConnectorOptions options) {
        return EmbeddedTransport.open(new EmbeddedSettings(options.bindAddress(), options.port(),
                options.advertisedAddress()));
    }
}
