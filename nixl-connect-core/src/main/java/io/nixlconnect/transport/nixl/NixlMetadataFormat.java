package io.nixlconnect.transport.nixl;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * Reads the agent name out of a NIXL agent metadata blob without NIXL. Needed when NIXL refuses to
 * load a blob (it then reports no name) and the agent must decide whether to replace a peer it
 * already loaded under that name.
 *
 * <p>The blob is NIXL's {@code nixlSerDes} encoding: {@code "nixlSerDes|"}, then tagged fields, each
 * {@code tag, uint64 length (little-endian), bytes, '|'}; the first field is {@code "Agent"}.
 */
final class NixlMetadataFormat {

    private static final byte[] HEADER = "nixlSerDes|".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] AGENT_TAG = "Agent".getBytes(StandardCharsets.US_ASCII);
    private static final int MAX_NAME_BYTES = 4096;

    private NixlMetadataFormat() {
    }

    /** The agent name the blob carries, or null when it is not NIXL agent metadata. */
    static String agentName(byte[] metadata) {
        int offset = 0;
        if (!startsWith(metadata, offset, HEADER)) {
            return null;
        }
        offset += HEADER.length;
        if (!startsWith(metadata, offset, AGENT_TAG)) {
            return null;
        }
        offset += AGENT_TAG.length;
        if (metadata.length < offset + Long.BYTES) {
            return null;
        }
        long length = ByteBuffer.wrap(metadata, offset, Long.BYTES).order(ByteOrder.LITTLE_ENDIAN).getLong();
        offset += Long.BYTES;
        if (length <= 0 || length > MAX_NAME_BYTES || metadata.length < offset + length + 1
                || metadata[offset + (int) length] != '|') {
            return null;
        }
        return new String(metadata, offset, (int) length, StandardCharsets.UTF_8);
    }

    private static boolean startsWith(byte[] data, int offset, byte[] prefix) {
        if (data == null || data.length < offset + prefix.length) {
            return false;
        }
        for (int i = 0; i < prefix.length; i++) {
            if (data[offset + i] != prefix[i]) {
                return false;
            }
        }
        return true;
    }
}
