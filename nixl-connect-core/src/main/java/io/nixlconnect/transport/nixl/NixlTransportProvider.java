package io.nixlconnect.transport.nixl;

import io.nixlconnect.transport.TransportProvider;
import io.nixlconnect.transport.TransportSettings;

/** The NIXL transport for {@link java.util.ServiceLoader}: first in the default preference list, used when it loads. */
public final class NixlTransportProvider implements TransportProvider {

    @Override
    public TransportSettings defaultSettings() {
        return NixlSettings.defaults();
    }

    @Override
    public int preference() {
        return 0;
    }
}
