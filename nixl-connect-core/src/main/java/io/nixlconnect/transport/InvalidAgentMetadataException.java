package io.nixlconnect.transport;

/**
 * A peer's agent metadata broke a rule of its backend's format and was refused before any native call.
 * {@link #field()} names the offending field, in the backend's own terms (for NIXL, e.g.
 * {@code MemSection[0].t}).
 */
public class InvalidAgentMetadataException extends TransportException {

    private static final long serialVersionUID = 1L;

    private final String field;

    public InvalidAgentMetadataException(String field, String problem) {
        super("Invalid agent metadata: field '" + field + "' " + problem);
        this.field = field;
    }

    /** The offending field. */
    public String field() {
        return field;
    }
}
