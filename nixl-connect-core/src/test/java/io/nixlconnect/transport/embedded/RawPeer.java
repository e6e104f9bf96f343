package io.nixlconnect.transport.embedded;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/** A hand-driven client of the embedded protocol on loopback, for attacks and probes. */
final class RawPeer implements AutoCloseable {

    /** What came back: an OK, an ERROR with its message, the connection closed, or nothing within the wait. */
    record Answer(String kind, String message) {
        static final Answer OK = new Answer("OK", "");
        static final Answer CLOSED = new Answer("CLOSED", "");
        static final Answer SILENT = new Answer("SILENT", "");

        static Answer error(String message) {
            return new Answer("ERROR", message);
        }
    }

    final Socket socket;
    private final OutputStream out;
    private final DataInputStream in;

    RawPeer(int port) throws IOException {
        socket = new Socket(InetAddress.getLoopbackAddress(), port);
        socket.setSoTimeout(10_000);
        out = socket.getOutputStream();
        in = new DataInputStream(socket.getInputStream());
    }

    static byte[] request(byte type, String agent, byte[] credential, long... addressLengthPairs) {
        long[] addresses = new long[addressLengthPairs.length / 2];
        long[] lengths = new long[addresses.length];
        for (int i = 0; i < addresses.length; i++) {
            addresses[i] = addressLengthPairs[2 * i];
            lengths[i] = addressLengthPairs[2 * i + 1];
        }
        ByteBuffer buffer = Wire.encodeRequest(type, agent, credential, addresses, lengths);
        byte[] bytes = new byte[buffer.remaining()];
        buffer.get(bytes);
        return bytes;
    }

    /** Only the fixed head of a request: any counts, no body. */
    static byte[] head(byte type, int agentLength, int credentialLength, int count) {
        return ByteBuffer.allocate(Wire.HEAD).putInt(Wire.MAGIC).put(type).putShort((short) agentLength)
                .putShort((short) credentialLength).putInt(count).array();
    }

    static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    RawPeer send(byte[] bytes) throws IOException {
        out.write(bytes);
        out.flush();
        return this;
    }

    Answer answer() throws IOException {
        return answer(10_000);
    }

    Answer answer(int waitMillis) throws IOException {
        socket.setSoTimeout(waitMillis);
        try {
            int status = in.read();
            if (status < 0) {
                return Answer.CLOSED;
            }
            if (status == Wire.OK) {
                return Answer.OK;
            }
            byte[] text = new byte[in.readUnsignedShort()];
            in.readFully(text);
            return Answer.error(new String(text, StandardCharsets.UTF_8));
        } catch (SocketTimeoutException e) {
            return Answer.SILENT;
        } catch (EOFException | java.net.SocketException e) {
            return Answer.CLOSED;
        }
    }

    byte[] readBytes(int n) throws IOException {
        byte[] bytes = new byte[n];
        in.readFully(bytes);
        return bytes;
    }

    /** Whether the server closed the connection within the wait (reads and discards anything else). */
    boolean closedWithin(int waitMillis) throws IOException {
        socket.setSoTimeout(waitMillis);
        try {
            while (true) {
                if (in.read() < 0) {
                    return true;
                }
            }
        } catch (SocketTimeoutException e) {
            return false;
        } catch (java.net.SocketException e) {
            return true;
        }
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
