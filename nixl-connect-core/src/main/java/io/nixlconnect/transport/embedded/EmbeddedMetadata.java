package io.nixlconnect.transport.embedded;

import io.nixlconnect.transport.TransportException;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * An embedded agent's metadata: what a peer needs to reach it (agent name, host, port). The connector
 * wraps these bytes in the same {@code b64:} + zlib envelope as NIXL's.
 */
record EmbeddedMetadata(String agent, String host, int port) {

    private static final int MAGIC = 0x4E58434D; // "NXCM"
    private static final int VERSION = 1;

    byte[] encode() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(64);
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeInt(MAGIC);
            out.writeByte(VERSION);
            out.writeUTF(agent);
            out.writeUTF(host);
            out.writeInt(port);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    /**
     * The common case — version 1, ASCII names, nothing after the port — read straight from the array (every
     * active operation loads its peer, so the streams and buffers of the general reader added up); null for
     * anything else, which the general reader then reads or refuses with its own message.
     */
    private static EmbeddedMetadata decodeAscii(byte[] metadata) {
        ByteBuffer in = ByteBuffer.wrap(metadata);
        if (in.remaining() < 5 + 2 || in.getInt() != MAGIC || in.get() != VERSION) {
            return null;
        }
        String agent = ascii(in);
        String host = agent == null ? null : ascii(in);
        if (host == null || in.remaining() != 4) {
            return null;
        }
        int port = in.getInt();
        if (agent.isEmpty() || host.isEmpty() || port <= 0 || port > 65535) {
            return null;
        }
        return new EmbeddedMetadata(agent, host, port);
    }

    /** A {@code writeUTF} string if it is ASCII (where modified UTF-8 is plain ASCII); null otherwise. */
    private static String ascii(ByteBuffer in) {
        if (in.remaining() < 2) {
            return null;
        }
        int length = in.getShort() & 0xFFFF;
        if (in.remaining() < length) {
            return null;
        }
        int start = in.position();
        for (int i = 0; i < length; i++) {
            byte b = in.get(start + i);
            if (b <= 0) { // NUL is two bytes in modified UTF-8, non-ASCII is negative
                return null;
            }
        }
        in.position(start + length);
        return new String(in.array(), start, length, StandardCharsets.US_ASCII);
    }

    static EmbeddedMetadata decode(byte[] metadata) {
        if (metadata == null || metadata.length < 5) {
            throw new TransportException("Peer agent metadata is too short to be embedded-transport metadata");
        }
        EmbeddedMetadata ascii = decodeAscii(metadata);
        if (ascii != null) {
            return ascii;
        }
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(metadata))) {
            if (in.readInt() != MAGIC) {
                throw new TransportException("Peer agent metadata is not from an embedded-transport peer "
                        + "(is the peer using NIXL? both sides must use the same backend)");
            }
            int version = in.readUnsignedByte();
            if (version != VERSION) {
                throw new TransportException("Peer uses embedded-transport metadata version " + version
                        + "; this build understands version " + VERSION);
            }
            String agent = in.readUTF();
            String host = in.readUTF();
            int port = in.readInt();
            if (agent.isEmpty() || host.isEmpty() || port <= 0 || port > 65535) {
                throw new TransportException("Peer agent metadata is malformed (agent '" + agent + "', host '" + host
                        + "', port " + port + ")");
            }
            return new EmbeddedMetadata(agent, host, port);
        } catch (IOException e) {
            throw new TransportException("Peer agent metadata is truncated or malformed: " + e.getMessage(), e);
        }
    }
}
