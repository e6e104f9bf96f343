package io.nixlconnect;

import org.jspecify.annotations.Nullable;

/**
 * An {@link RdmaMetadata} or {@link SerializedDescriptor} document broke a rule of the wire format.
 * {@link #field()} names the offending field, as the JSON spells it (for example
 * {@code descriptors[0].ptr}). Metadata comes from a peer, so a bad document is a {@link NixlConnectException}
 * like every other failure of this library, not an {@link IllegalArgumentException} (which is kept for arguments
 * that are the caller's own mistake).
 */
public class InvalidMetadataException extends NixlConnectException {

    private static final long serialVersionUID = 1L;

    private final String field;

    public InvalidMetadataException(String field, String problem) {
        super("Invalid RdmaMetadata: field '" + field + "' " + problem);
        this.field = field;
    }

    public InvalidMetadataException(String field, String problem, @Nullable Throwable cause) {
        super("Invalid RdmaMetadata: field '" + field + "' " + problem, cause);
        this.field = field;
    }

    /** The offending field, as the JSON spells it. */
    public String field() {
        return field;
    }
}
