package io.nixlconnect.transport;

/**
 * A backend, as {@link java.util.ServiceLoader} finds it ({@code META-INF/services/io.nixlconnect.transport.TransportProvider}):
 * supplies the default settings a connector uses when its options name no transport. The API knows the
 * backends only through this interface.
 */
public interface TransportProvider {

    /** The backend's settings with every default. */
    TransportSettings defaultSettings();

    /** Place in the default preference list: lower is tried first (NIXL before the embedded transport). */
    int preference();
}
