package io.nixlconnect.transport;

/**
 * How to open one transport backend: each backend owns its settings as one record implementing this
 * interface, with its defaults defined there ({@code EmbeddedSettings}, {@code NixlSettings}). A
 * {@code ConnectorOptions} holds a preference list of them; the connector opens the first that can be used here.
 */
public interface TransportSettings {

    /** Short backend name, as logs, health and {@code nixl.connect.backend} spell it: {@code embedded}, {@code nixl}. */
    String name();

    /**
     * Opens the transport these settings describe.
     *
     * @throws TransportUnavailableException if the backend cannot be used on this machine (its native library is
     *                                       missing, say): the next transport in a preference list is tried
     * @throws TransportException            if it can be used but does not start (a port already taken)
     */
    Transport open();
}
