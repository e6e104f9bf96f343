package io.nixlconnect;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The state of a connector's transport, for health reports ({@link Connector#transportStatus()}).
 *
 * @param backend  the transport in use: {@code embedded} or {@code nixl}
 * @param agent    the connector's agent name, as peers know it ({@code <worker id>-1})
 * @param serving  whether the transport is up and serving peers
 * @param endpoint {@code host:port} peers connect to (embedded transport); {@code null} where the backend has no
 *                 single endpoint (NIXL) or the connector is closed
 * @param details  the backend's own counters and settings (embedded: registered regions, open windows, transfers
 *                 in flight, loaded peers; NIXL: plugins, library, notification counters); empty once closed.
 *                 Their names may change between releases
 */
public record TransportStatus(String backend, String agent, boolean serving, @Nullable String endpoint, Map<String, Object> details) {

    public TransportStatus {
        details = Collections.unmodifiableMap(new LinkedHashMap<>(details)); // keeps the backend's order
    }
}
