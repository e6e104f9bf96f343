package io.nixlconnect.dynamo;

import java.util.Locale;

/**
 * Where instances are registered and found ({@code DYN_DISCOVERY_BACKEND}). Dynamo's {@code kubernetes} backend
 * (custom resources and EndpointSlices) is not supported yet: docs/dynamo.md says why.
 */
public enum DiscoveryBackend {
    /** Files in a shared directory ({@code DYN_FILE_KV}), kept alive by touching them. */
    FILE("file"),
    /** etcd ({@code ETCD_ENDPOINTS}), through its v3 JSON gateway, kept alive by a lease. Dynamo's default. */
    ETCD("etcd");

    private final String wireName;

    DiscoveryBackend(String wireName) {
        this.wireName = wireName;
    }

    /** The name {@code DYN_DISCOVERY_BACKEND} takes. */
    public String wireName() {
        return wireName;
    }

    /**
     * The backend {@code DYN_DISCOVERY_BACKEND} names.
     *
     * @throws IllegalArgumentException for {@code kubernetes}, {@code mem} or anything else, naming what is supported
     */
    public static DiscoveryBackend fromName(String name) {
        String lower = name == null ? "" : name.trim().toLowerCase(Locale.ROOT);
        for (DiscoveryBackend backend : values()) {
            if (backend.wireName.equals(lower)) {
                return backend;
            }
        }
        throw new IllegalArgumentException("discovery backend \"" + name + "\" is not supported by nixl-connect-dynamo"
                + " (Dynamo " + DynamoRuntime.SUPPORTED_VERSION + "): use file or etcd");
    }
}
