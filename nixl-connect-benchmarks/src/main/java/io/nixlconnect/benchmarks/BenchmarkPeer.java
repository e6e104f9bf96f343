package io.nixlconnect.benchmarks;

import io.nixlconnect.Connector;
import io.nixlconnect.ReadableOperation;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Semaphore;

/**
 * The passive JVM of the benchmark, driven over stdin: {@code alloc SIZE} allocates (and registers) a buffer,
 * {@code publish} creates a ReadableOperation over it and prints {@code META json}, then {@code DONE} once the
 * peer has read it; {@code exit} ends.
 *
 * <p>{@code bare LENGTH SIZE} is the same exchange without the library, the floor a complete operation is compared
 * with: it prints a {@code META} line of {@code LENGTH} characters, then a server thread (listening on loopback, its
 * port printed once as {@code PORT n} by {@code listen}) reads a 32-byte request and answers {@code SIZE} bytes, and
 * wakes this thread, which prints {@code DONE}: the same processes, threads, pipe and socket round trips and
 * thread hand-off as a small READ of a published readable.
 */
public final class BenchmarkPeer {

    private BenchmarkPeer() {
    }

    public static void main(String[] args) throws Exception {
        String backend = args.length > 0 ? args[0] : "embedded";
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        BenchmarkBuffer buffer = null;
        BareExchange bare = new BareExchange();
        try (Connector connector = new Connector(BenchmarkOptions.connector("bench-peer", backend).build());
             BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            out.println("READY " + connector.backendName());
            out.flush();
            String line;
            while ((line = in.readLine()) != null) {
                if (line.startsWith("alloc ")) {
                    if (buffer != null) {
                        buffer.close();
                    }
                    buffer = new BenchmarkBuffer(Long.parseLong(line.substring(6).trim()),
                            BenchmarkBuffer.hugePagesRequested(), (byte) 1);
                    buffer.descriptor().registerMemory(connector);
                    out.println("OK");
                } else if (line.equals("publish")) {
                    ReadableOperation readable = connector.createReadable(buffer.descriptor());
                    out.println("META " + readable.metadata().toJson());
                    out.flush();
                    readable.waitForCompletion();
                    out.println("DONE");
                } else if (line.equals("listen")) {
                    out.println("PORT " + bare.listen());
                } else if (line.startsWith("bare ")) {
                    String[] words = line.split(" ");
                    bare.expect(Integer.parseInt(words[2]));
                    out.println("META " + "x".repeat(Integer.parseInt(words[1])));
                    out.flush();
                    bare.answered.acquire();
                    out.println("DONE");
                } else if (line.equals("exit")) {
                    break;
                }
                out.flush();
            }
        } finally {
            if (buffer != null) {
                buffer.close();
            }
        }
    }

    /** The library-free exchange: a loopback server thread answering fixed-size requests (see the class comment). */
    private static final class BareExchange {
        final Semaphore answered = new Semaphore(0);
        private final Semaphore expected = new Semaphore(0);
        private final byte[] answer = new byte[1 << 20];
        private volatile int answerSize;

        int listen() throws IOException {
            ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
            Thread thread = new Thread(() -> serve(server), "bare-exchange");
            thread.setDaemon(true);
            thread.start();
            return server.getLocalPort();
        }

        void expect(int size) {
            answerSize = size;
            expected.release();
        }

        private void serve(ServerSocket server) {
            try (server; Socket socket = server.accept()) {
                socket.setTcpNoDelay(true);
                DataInputStream in = new DataInputStream(socket.getInputStream());
                OutputStream out = socket.getOutputStream();
                byte[] request = new byte[32];
                while (true) {
                    in.readFully(request);
                    expected.acquire();
                    out.write(answer, 0, answerSize);
                    out.flush();
                    answered.release();
                }
            } catch (IOException | InterruptedException e) {
                // the harness closed the connection: the benchmark is over
            }
        }
    }
}
