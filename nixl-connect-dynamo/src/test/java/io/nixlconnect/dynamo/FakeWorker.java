package io.nixlconnect.dynamo;

import io.nixlconnect.dynamo.internal.discovery.InstanceRecord;
import io.nixlconnect.dynamo.internal.wire.ControlMessages;
import io.nixlconnect.dynamo.internal.wire.FrameInput;
import io.nixlconnect.dynamo.internal.wire.RequestFrame;
import io.nixlconnect.dynamo.internal.wire.TwoPart;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A hand-driven worker for hostile-input tests: it registers itself in file discovery like a Dynamo worker, reads
 * each request frame, and then does whatever the test's script says with the acknowledgement and the call home.
 */
final class FakeWorker implements AutoCloseable {

    /** What the worker does with one request. */
    interface Script {
        void handle(Request request) throws Exception;
    }

    /** One request as received, with the means to answer it. */
    static final class Request {
        final RequestFrame frame;
        final ControlMessages.RequestControl control;
        final byte[] body;
        final OutputStream ackOut;

        Request(RequestFrame frame, ControlMessages.RequestControl control, byte[] body, OutputStream ackOut) {
            this.frame = frame;
            this.control = control;
            this.body = body;
            this.ackOut = ackOut;
        }

        void ack(String answer) throws IOException {
            byte[] text = answer.getBytes(java.nio.charset.StandardCharsets.UTF_8);
            byte[] frame = new byte[4 + text.length];
            frame[0] = (byte) (text.length >>> 24);
            frame[1] = (byte) (text.length >>> 16);
            frame[2] = (byte) (text.length >>> 8);
            frame[3] = (byte) text.length;
            System.arraycopy(text, 0, frame, 4, text.length);
            ackOut.write(frame);
            ackOut.flush();
        }

        /** Calls home and sends the handshake; the connection, to write the rest. */
        Socket callHome() throws IOException {
            Socket socket = new Socket(control.host(), control.port());
            socket.getOutputStream().write(TwoPart.headerOnly(ControlMessages.handshake(control.subject())).encode());
            return socket;
        }

        static void send(Socket socket, byte[] bytes) throws IOException {
            socket.getOutputStream().write(bytes);
            socket.getOutputStream().flush();
        }
    }

    final EndpointId endpoint;
    final long instanceId;
    private final ServerSocket server;
    private final Path recordFile;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private final PayloadCodec codec;
    private final java.util.concurrent.atomic.AtomicInteger framesReceived = new java.util.concurrent.atomic.AtomicInteger();
    private final java.util.concurrent.atomic.AtomicInteger connectionsAccepted = new java.util.concurrent.atomic.AtomicInteger();
    volatile Script script;

    FakeWorker(Path kv, String endpoint, PayloadCodec codec, Script script) throws IOException {
        this.endpoint = EndpointId.parse(endpoint);
        this.instanceId = 0x1234_5678_9abcL + (System.nanoTime() & 0xffff);
        this.codec = codec;
        this.script = script;
        server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        DynamoInstance instance = new DynamoInstance(this.endpoint, instanceId, "127.0.0.1", server.getLocalPort(),
                InstanceRecord.subject(this.endpoint, instanceId), codec, "cpu");
        Path directory = kv.resolve("v1").resolve("instances");
        Files.createDirectories(directory);
        String key = InstanceRecord.key(this.endpoint, instanceId).substring(InstanceRecord.PREFIX.length());
        recordFile = directory.resolve(key.replace("/", "%2F"));
        Files.write(recordFile, InstanceRecord.write(instance));
        Thread thread = new Thread(this::accept, "fake-worker");
        thread.setDaemon(true);
        thread.start();
    }

    private void accept() {
        while (!server.isClosed()) {
            try {
                Socket socket = server.accept();
                connectionsAccepted.incrementAndGet();
                sockets.add(socket);
                Thread thread = new Thread(() -> serve(socket), "fake-worker-connection");
                thread.setDaemon(true);
                thread.start();
            } catch (IOException e) {
                return;
            }
        }
    }

    private void serve(Socket socket) {
        try {
            FrameInput in = new FrameInput(socket, 30_000);
            for (int first; (first = in.beginFrame(0)) >= 0; ) {
                RequestFrame frame = RequestFrame.read(in, first, 1 << 26);
                framesReceived.incrementAndGet();
                TwoPart payload = TwoPart.parse(frame.payload(), ControlMessages.MAX_CONTROL_HEADER);
                ControlMessages.RequestControl control = ControlMessages.parseRequestHeader(payload.header());
                script.handle(new Request(frame, control, payload.body(), socket.getOutputStream()));
            }
        } catch (Exception e) {
            // the script ended the connection, or the caller did
        }
        Closing asked = closing.remove(socket);
        if (asked != null) {
            try {
                if (asked.reset()) {
                    socket.setSoLinger(true, 0);
                }
                socket.close();
            } catch (IOException e) {
                // closed
            }
            asked.closed().countDown();
        }
    }

    /** Keeps the record alive (file discovery's TTL). */
    void touch() throws IOException {
        Files.setLastModifiedTime(recordFile, java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis()));
    }

    void deregister() throws IOException {
        Files.deleteIfExists(recordFile);
    }

    /** Request frames read whole, on all connections. */
    int framesReceived() {
        return framesReceived.get();
    }

    int connectionsAccepted() {
        return connectionsAccepted.get();
    }

    /**
     * Closes every request connection accepted so far, as a worker that restarted or dropped them: with a FIN, or
     * ({@code reset}) with a reset. Each is closed by its own serving thread once its read has ended (a socket closed
     * under a blocked read is released only when that read returns), so on loopback the caller's socket has the FIN
     * or the reset when this returns.
     */
    void closeConnections(boolean reset) throws Exception {
        List<java.util.concurrent.CountDownLatch> done = new java.util.ArrayList<>();
        for (Socket socket : sockets) {
            java.util.concurrent.CountDownLatch closed = new java.util.concurrent.CountDownLatch(1);
            closing.put(socket, new Closing(reset, closed));
            done.add(closed);
            socket.shutdownInput(); // the serving thread's read ends; it closes the socket as asked
            sockets.remove(socket);
        }
        for (java.util.concurrent.CountDownLatch closed : done) {
            if (!closed.await(30, java.util.concurrent.TimeUnit.SECONDS)) {
                throw new IllegalStateException("a fake worker connection did not close");
            }
        }
    }

    private record Closing(boolean reset, java.util.concurrent.CountDownLatch closed) {
    }

    private final java.util.Map<Socket, Closing> closing = new java.util.concurrent.ConcurrentHashMap<>();

    PayloadCodec codec() {
        return codec;
    }

    @Override
    public void close() throws IOException {
        deregister();
        server.close();
        for (Socket socket : sockets) {
            socket.close();
        }
    }
}
