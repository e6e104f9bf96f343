package io.nixlconnect.dynamo;

import java.util.Locale;

/** How a request's body and its responses are encoded on the TCP request plane ({@code payload_codec}). */
public enum PayloadCodec {
    /** JSON: what a Dynamo client sends to an instance whose discovery record names no codec. */
    JSON("json"),
    /** msgpack with named maps: Dynamo 1.6's default, named {@code request_plane_codec} in the discovery record. */
    MSGPACK("msgpack");

    private final String wireName;

    PayloadCodec(String wireName) {
        this.wireName = wireName;
    }

    /** The name on the wire ({@code "json"}, {@code "msgpack"}). */
    public String wireName() {
        return wireName;
    }

    /**
     * The codec a wire name names, case-insensitively.
     *
     * @throws IllegalArgumentException for any other name
     */
    public static PayloadCodec fromWireName(String name) {
        String lower = name == null ? "" : name.trim().toLowerCase(Locale.ROOT);
        for (PayloadCodec codec : values()) {
            if (codec.wireName.equals(lower)) {
                return codec;
            }
        }
        throw new IllegalArgumentException("payload codec must be json or msgpack, was \"" + name + "\"");
    }
}
