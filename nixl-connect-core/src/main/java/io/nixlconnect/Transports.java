package io.nixlconnect;

import io.nixlconnect.transport.Transport;
import io.nixlconnect.transport.TransportException;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import io.nixlconnect.transport.embedded.EmbeddedTransport;
import io.nixlconnect.transport.nixl.NixlSettings;
import io.nixlconnect.transport.nixl.NixlTransport;
import java.nio.file.Path;
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
            case NIXL -> {
                try {
                    yield nixl(options);
                } catch (TransportException | LinkageError e) {
                    throw new BackendUnavailableException(TransportBackend.NIXL,
                            "Backend 'nixl' was requested but NIXL cannot be used: " + e.getMessage()
                                    + " Install NIXL (>= 1.1) or point to it (library path setting, NIXL_PREFIX), "
                                    + "or choose backend 'auto' or 'embedded'.", e);
                }
            }
            case AUTO -> {
                try {
                    Transport nixl = nixl(options);
                    log.info("nixl-connect: backend 'auto' chose NIXL ({})", ((NixlTransport) nixl).libraryDescription());
                    yield nixl;
                } catch (TransportException | LinkageError e) {
                    log.info("nixl-connect: backend 'auto' chose the embedded transport: NIXL is not available ({})",
                            firstLine(e.getMessage()));
                    yield embedded(options);
                }
            }
        };
    }

    private static Transport nixl(ConnectorOptions options) {
        NixlSettings settings = NixlSettings.defaults().withBackends(options.nixlBackends())
                .withBackendParameters(options.nixlBackendParameters());
        if (options.nixlLibraryPath() != null) {
            settings = settings.withLibraryDir(Path.of(options.nixlLibraryPath()));
        }
        if (options.nixlPluginDirectory() != null) {
            settings = settings.withPluginDir(Path.of(options.nixlPluginDirectory()));
        }
        return NixlTransport.open(settings);
    }

    private static Transport embedded(ConnectorOptions options) {
        return EmbeddedTransport.open(new EmbeddedSettings(options.bindAddress(), options.port(),
                options.advertisedAddress()).withSharedSecret(options.embeddedSharedSecret())
                .withSslContext(options.embeddedSslContext())
                .withTimeouts(options.embeddedIdleTimeout(), options.embeddedReadTimeout())
                .withServerConnectionLimits(options.embeddedMaxConnections(), options.embeddedMaxConnectionsPerAddress()));
    }

    private static String firstLine(String message) {
        if (message == null) {
            return "no reason given";
        }
        int newline = message.indexOf('\n');
        return newline < 0 ? message : message.substring(0, newline);
    }
}
