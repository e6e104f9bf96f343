package io.nixlconnect;

/** Which transport a {@link Connector} uses. */
public enum TransportBackend {
    /** NIXL when its native library loads, otherwise the embedded transport (logged, with the reason). */
    AUTO,
    /** NIXL through JNA; fails if {@code libnixl_capi.so} cannot be loaded. */
    NIXL,
    /** The pure-Java transport over TCP; never touches native transport code. */
    EMBEDDED
}
