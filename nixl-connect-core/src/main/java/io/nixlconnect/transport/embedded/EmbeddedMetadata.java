package io.nixlconnect.transport.embedded;

import io.nixlconnect.transport.TransportException;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;

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

    static EmbeddedMetadata decode(byte[] metadata) {
        if (metadata == null || metadata.length < 5) {
            throw new TransportException("Peer agent metadata is too short to be embedded-transport metadata");
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
