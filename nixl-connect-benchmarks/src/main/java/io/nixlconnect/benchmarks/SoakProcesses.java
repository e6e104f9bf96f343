package io.nixlconnect.benchmarks;

import static io.nixlconnect.benchmarks.NixlSoak.POOL;

import io.nixlconnect.Connector;
import io.nixlconnect.Descriptor;
import io.nixlconnect.Operation;
import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.ReadableOperation;
import io.nixlconnect.WritableOperation;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/** The soak's Java child processes: the producer, a service that publishes per request, and a reader to be killed. */
final class SoakProcesses {

    private SoakProcesses() {
    }

    // --- the producer: a service that publishes per request and closes once done ---

    static void producer() throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        try (Connector connector = NixlSoak.connector(NixlSoak.PRODUCER); Descriptor pool = Descriptor.allocate(POOL);
             Descriptor inbox = Descriptor.allocate(POOL);
             BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            pool.registerMemory(connector);
            inbox.registerMemory(connector); // what consumers write lands apart from what they read
            long poolRegistration = connector.registeredBytes();
            // Each block starts with its own address, which the consumer checks.
            long base = pool.ptr();
            java.nio.ByteBuffer memory = pool.asByteBuffer().order(java.nio.ByteOrder.LITTLE_ENDIAN);
            for (int offset = 0; offset + 8 <= POOL; offset += 4096) {
                memory.putLong(offset, base + offset); // every block size used is a multiple of 4 KiB
            }
            SplittableRandom random = new SplittableRandom(ProcessHandle.current().pid());
            Descriptor big = null;
            ReadableOperation bigReadable = null;
            out.println("READY");
            String line;
            while ((line = in.readLine()) != null) {
                String[] words = line.trim().split("\\s+");
                switch (words[0]) {
                    case "readable", "writable", "abort" -> {
                        int count = Integer.parseInt(words[1]);
                        int size = Integer.parseInt(words[2]);
                        List<Descriptor> blocks = NixlSoak.randomBlocks(words[0].equals("writable") ? inbox : pool,
                                random, count, size);
                        Operation operation = words[0].equals("writable") ? connector.createWritable(blocks)
                                : connector.createReadable(blocks);
                        RdmaMetadata metadata = operation instanceof ReadableOperation r ? r.metadata()
                                : ((WritableOperation) operation).metadata();
                        out.println("META " + metadata.toJson());
                        Runnable done = () -> {
                            try {
                                operation.close();
                            } catch (RuntimeException e) {
                                System.err.println("producer: closing failed: " + e);
                            }
                            blocks.forEach(Descriptor::close);
                        };
                        if (words[0].equals("abort")) {
                            done.run(); // the client went away: closed unread
                        } else {
                            operation.completion().whenComplete((ok, error) -> done.run());
                        }
                    }
                    case "big" -> {
                        big = Descriptor.allocate(Long.parseLong(words[1]));
                        bigReadable = connector.createReadable(big);
                        out.println("META " + bigReadable.metadata().toJson());
                    }
                    case "close-big" -> {
                        bigReadable.close();
                        big.close(); // returns at once: the library frees or keeps it after the drain
                        out.println("CLOSED");
                    }
                    case "stats" -> {
                        Runtime runtime = Runtime.getRuntime();
                        Map<String, Object> details = connector.transportStatus().details();
                        out.println("STATS " + ((runtime.totalMemory() - runtime.freeMemory()) >> 10) + " "
                                + NixlSoak.rssKiB(Path.of("/proc/self/status"))
                                + " " + details.get("bytesKeptResident") + " " + details.get("bytesKeptAfterDrainLimit")
                                + " " + (connector.registeredBytes() - poolRegistration) + " "
                                + connector.inFlightOperations() + " " + openFileDescriptors() + " "
                                + connector.remoteAgentCount());
                    }
                    case "exit" -> {
                        return;
                    }
                    default -> out.println("ERROR unknown command " + words[0]);
                }
            }
        }
    }

    /** File descriptors this process holds open. */
    static long openFileDescriptors() throws java.io.IOException {
        try (var open = java.nio.file.Files.list(Path.of("/proc/self/fd"))) {
            return open.count() - 1; // less the one listing them
        }
    }

    // --- a reader in its own JVM, to be killed or stopped ---

    static void reader() throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        try (Connector connector = NixlSoak.connector("soak-reader-" + ProcessHandle.current().pid());
             BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            out.println("READY");
            String line = in.readLine();
            RdmaMetadata metadata = RdmaMetadata.fromJson(line.substring(5));
            Descriptor target = Descriptor.allocate(metadata.totalSize());
            connector.beginRead(metadata, target);
            out.println("STARTED");
            while (in.readLine() != null) {
                // until killed
            }
        }
    }
}
