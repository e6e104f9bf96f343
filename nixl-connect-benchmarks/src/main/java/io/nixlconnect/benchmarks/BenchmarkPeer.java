package io.nixlconnect.benchmarks;

import io.nixlconnect.Connector;
import io.nixlconnect.ReadableOperation;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * The passive JVM of the benchmark, driven over stdin: {@code alloc SIZE} allocates (and registers) a buffer,
 * {@code publish} creates a ReadableOperation over it and prints {@code META json}, then {@code DONE} once the
 * peer has read it; {@code exit} ends.
 */
public final class BenchmarkPeer {

    private BenchmarkPeer() {
    }

    public static void main(String[] args) throws Exception {
        String backend = args.length > 0 ? args[0] : "embedded";
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        BenchmarkBuffer buffer = null;
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
}
