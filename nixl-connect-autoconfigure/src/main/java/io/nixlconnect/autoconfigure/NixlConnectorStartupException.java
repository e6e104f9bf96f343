package io.nixlconnect.autoconfigure;

import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.transport.TransportSettings;

/**
 * The auto-configured connector could not be constructed with valid settings: the requested transport is
 * not available, or it could not start (for example, the embedded port is taken). Carries the options so
 * {@link NixlConnectFailureAnalyzer} can say which settings were in effect.
 */
public class NixlConnectorStartupException extends IllegalStateException {

    private static final long serialVersionUID = 1L;

    private final transient ConnectorOptions options;

    public NixlConnectorStartupException(ConnectorOptions options, Throwable cause) {
        super("nixl-connect connector '" + options.workerId() + "' (transports " + options.transports().stream()
                .map(TransportSettings::name).toList() + ") could not start: " + cause.getMessage(), cause);
        this.options = options;
    }

    public ConnectorOptions options() {
        return options;
    }
}
