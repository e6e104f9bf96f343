package io.nixlconnect.transport.embedded;

import io.nixlconnect.transport.TransportProvider;
import io.nixlconnect.transport.TransportSettings;

/** The embedded transport for {@link java.util.ServiceLoader}: last in the default preference list, as it works everywhere. */
public final class EmbeddedTransportProvider implements TransportProvider {

    @Override
    public TransportSettings defaultSettings() {
        return EmbeddedSettings.defaults();
    }

    @Override
    public int preference() {
        return 100;
    }
}
