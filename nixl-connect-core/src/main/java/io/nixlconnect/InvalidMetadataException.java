package io.nixlconnect;

/**
 * An {@link RdmaMetadata} or {@link SerializedDescriptor} document broke a rule of the wire format.
 * {@link #field()} names the offending field, as the JSON spells it (for example
 * {@code descriptors[0].ptr}).
 */
public class InvalidMetadataException extends IllegalArgumentException {

    private static final long serialVersionUID = 1L;

    private final String field;

    public InvalidMetadataException(String field, String problem) {
        super("Invalid RdmaMetadata: field '" + field + "' " + problem);
        this.field = field;
    }

    public InvalidMetadataException(String field, String problem, Throwable cause) {
        super("Invalid RdmaMetadata: field '" + field + "' " + problem, cause);
        this.field = field;
    }

    /** The offending field, as the JSON spells it. */
    public String field() {
        return field;
    }
}
