package io.nixlconnect.dynamo;

/**
 * A Dynamo endpoint's name: namespace, component and endpoint, written {@code ns.comp.ep} as Dynamo's
 * {@code runtime.endpoint("ns.comp.ep")} takes it.
 *
 * @param namespace the namespace, for example {@code "demo"}
 * @param component the component, for example {@code "encoder"}
 * @param endpoint  the endpoint, for example {@code "generate"}
 */
public record EndpointId(String namespace, String component, String endpoint) {

    /** Longest name accepted for each part, in characters (Dynamo's paths travel behind a 16-bit length). */
    public static final int MAX_PART_LENGTH = 256;

    public EndpointId {
        check(namespace, "namespace");
        check(component, "component");
        check(endpoint, "endpoint");
    }

    private static void check(String part, String name) {
        if (part == null || part.isEmpty()) {
            throw new IllegalArgumentException(name + " must not be empty");
        }
        if (part.length() > MAX_PART_LENGTH) {
            throw new IllegalArgumentException(name + " is longer than " + MAX_PART_LENGTH + " characters");
        }
        for (int i = 0; i < part.length(); i++) {
            char c = part.charAt(i);
            if (c == '/' || c == '.' || c < 0x20 || c == 0x7f) {
                throw new IllegalArgumentException(name + " must not contain '/', '.' or control characters, was \""
                        + part + "\"");
            }
        }
    }

    /**
     * Parses {@code ns.comp.ep}.
     *
     * @throws IllegalArgumentException unless the text is three non-empty names separated by dots
     */
    public static EndpointId parse(String path) {
        if (path == null) {
            throw new IllegalArgumentException("endpoint path must not be null");
        }
        String[] parts = path.split("\\.", -1);
        if (parts.length != 3) {
            throw new IllegalArgumentException("endpoint path must be namespace.component.endpoint, was \"" + path + "\"");
        }
        return new EndpointId(parts[0], parts[1], parts[2]);
    }

    /** {@code ns.comp.ep}. */
    @Override
    public String toString() {
        return namespace + "." + component + "." + endpoint;
    }
}
