package io.nixlconnect;

import io.nixlconnect.transport.embedded.EmbeddedSettings;
import io.nixlconnect.transport.nixl.NixlSettings;
import java.io.BufferedReader;
import java.io.FileInputStream;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.time.Duration;
import java.util.zip.CRC32;

/**
 * A second JVM for the cross-process tests: a passive worker driven line by line over stdin.
 *
 * <pre>
 * readable SIZE SEED      → "META json"; later "PATH key path" (how the peer reached it), then "DONE key status"
 * blank SIZE              → a readable of SIZE zeroed bytes (no heap copy, any size): "META json"
 * writable SIZE           → "META json"; later "WRITTEN key status crc"
 * multi COUNT SIZE SEED   → ONE readable over COUNT descriptors of SIZE bytes, data from SEED+i: "META json"
 * many COUNT SIZE SEED    → COUNT readables of SIZE bytes, data from SEED+i: COUNT "META json" lines
 * read JSON               → reads the described memory into a new buffer: "READ key status crc"
 * write SIZE SEED JSON    → writes SIZE bytes of data from SEED into the described memory: "WROTE key status crc"
 * stats                   → "STATS registeredBytes inFlight"
 * producer SIZE SEED      → a producer that comes and goes: a connector of its own (a new agent and endpoint) with one
 *                           readable of SIZE bytes from SEED: "META json"; once read, closes it: "GONE key status"
 * tryread JSON            → as read, but a failure is a line: "READ key status crc" or "FAILED message"
 * hoard                   → opens /dev/null until the process is out of file descriptors: "HOARDED count"
 * free                    → closes what hoard opened: "FREED count"
 * peers                   → "PEERS cachedPeers openConnections departed idleClosed evicted socketFds"
 * exit                    → closes the connector and exits
 * </pre>
 * crc is zlib's CRC-32 (as the Python peer reports it). {@code -Dpeer.backend=nixl} (with {@code -Dpeer.nixl=DIR},
 * NIXL's library folder) runs the NIXL backend instead of the embedded transport.
 */
public final class PeerProcess {

    private PeerProcess() {
    }

    static byte[] data(long seed, int size) {
        byte[] bytes = new byte[size];
        SplittableRandom random = new SplittableRandom(seed);
        for (int i = 0; i < size; i++) {
            bytes[i] = (byte) random.nextInt(256);
        }
        return bytes;
    }

    /** {@code crc(data(seed, size))} without holding the data. */
    static long crcOfData(long seed, long size) {
        CRC32 crc = new CRC32();
        SplittableRandom random = new SplittableRandom(seed);
        byte[] chunk = new byte[1 << 16];
        for (long done = 0; done < size; done += chunk.length) {
            int n = (int) Math.min(chunk.length, size - done);
            for (int i = 0; i < n; i++) {
                chunk[i] = (byte) random.nextInt(256);
            }
            crc.update(chunk, 0, n);
        }
        return crc.getValue();
    }

    static long crc(byte[] bytes) {
        CRC32 crc = new CRC32();
        crc.update(bytes);
        return crc.getValue();
    }

    /** This process's open sockets: the entries of /proc/self/fd that are sockets. */
    static long socketFds() throws IOException {
        long sockets = 0;
        try (DirectoryStream<Path> fds = Files.newDirectoryStream(Path.of("/proc/self/fd"))) {
            for (Path fd : fds) {
                try {
                    if (Files.readSymbolicLink(fd).toString().startsWith("socket:")) {
                        sockets++;
                    }
                } catch (IOException e) {
                    // closed meanwhile (the listing's own descriptor, for one)
                }
            }
        }
        return sockets;
    }

    /** Waits for the operation to end; its status tells how. */
    private static void end(AbstractOperation operation) {
        try {
            operation.waitForCompletion(Duration.ofSeconds(120));
        } catch (TransferException e) {
            System.err.println("peer: " + operation + " ended: " + e.getMessage());
        }
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        List<Descriptor> owned = new ArrayList<>();
        List<FileInputStream> hoard = new ArrayList<>();
        // -Dpeer.bind=ADDRESS puts the server on another interface (the two-host test's network namespace);
        // -Dpeer.sameHostCopy=false makes the peer decline direct copies (always TCP); -Dpeer.port fixes its port.
        ConnectorOptions.Builder options = ConnectorOptions.builder().workerId("peer-" + ProcessHandle.current().pid());
        if ("nixl".equals(System.getProperty("peer.backend"))) {
            options.transports(NixlSettings.defaults().withLibraryDir(Path.of(System.getProperty("peer.nixl"))));
        } else {
            options.transports(EmbeddedSettings.defaults().withBindAddress(System.getProperty("peer.bind", "127.0.0.1"))
                    .withPort(Integer.getInteger("peer.port", 0))
                    .withSameHostCopy(Boolean.parseBoolean(System.getProperty("peer.sameHostCopy", "true"))));
        }
        try (Connector connector = new Connector(options.build());
             BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            out.println("READY " + connector.name());
            String line;
            while ((line = in.readLine()) != null) {
                String[] words = line.trim().split("\\s+");
                switch (words[0]) {
                    case "readable" -> {
                        Descriptor descriptor = new Descriptor(data(Long.parseLong(words[2]), Integer.parseInt(words[1])));
                        owned.add(descriptor);
                        ReadableOperation op = connector.createReadable(descriptor);
                        out.println("META " + op.metadata().toJson());
                        op.completion().whenComplete((ok, error) -> {
                            out.println("PATH " + op.notificationKey() + " " + op.transferPath());
                            out.println("DONE " + op.notificationKey() + " " + op.status());
                        });
                    }
                    case "blank" -> {
                        Descriptor descriptor = Descriptor.allocate(Long.parseLong(words[1]));
                        owned.add(descriptor);
                        out.println("META " + connector.createReadable(descriptor).metadata().toJson());
                    }
                    case "writable" -> {
                        Descriptor descriptor = Descriptor.allocate(Integer.parseInt(words[1]));
                        owned.add(descriptor);
                        WritableOperation op = connector.createWritable(descriptor);
                        out.println("META " + op.metadata().toJson());
                        op.completion().whenComplete((ok, error) -> out.println("WRITTEN " + op.notificationKey() + " "
                                + op.status() + " " + crc(descriptor.toByteArray())));
                    }
                    case "multi" -> {
                        int count = Integer.parseInt(words[1]);
                        int size = Integer.parseInt(words[2]);
                        long seed = Long.parseLong(words[3]);
                        List<Descriptor> descriptors = new ArrayList<>();
                        for (int i = 0; i < count; i++) {
                            descriptors.add(new Descriptor(data(seed + i, size)));
                        }
                        owned.addAll(descriptors);
                        ReadableOperation op = connector.createReadable(descriptors);
                        out.println("META " + op.metadata().toJson());
                        op.completion().whenComplete((ok, error) -> out.println("DONE " + op.notificationKey() + " " + op.status()));
                    }
                    case "many" -> {
                        int count = Integer.parseInt(words[1]);
                        int size = Integer.parseInt(words[2]);
                        long seed = Long.parseLong(words[3]);
                        StringBuilder lines = new StringBuilder();
                        for (int i = 0; i < count; i++) {
                            Descriptor descriptor = new Descriptor(data(seed + i, size));
                            owned.add(descriptor);
                            lines.append("META ").append(connector.createReadable(descriptor).metadata().toJson()).append('\n');
                        }
                        out.print(lines);
                        out.flush();
                    }
                    case "read" -> {
                        RdmaMetadata metadata = RdmaMetadata.fromJson(line.trim().substring(5));
                        try (Descriptor target = Descriptor.allocate(metadata.totalSize())) {
                            ReadOperation op = connector.beginRead(metadata, target);
                            end(op);
                            out.println("READ " + op.notificationKey() + " " + op.status() + " " + crc(target.toByteArray()));
                        }
                    }
                    case "write" -> {
                        String[] parts = line.trim().split("\\s+", 4);
                        byte[] data = data(Long.parseLong(parts[2]), Integer.parseInt(parts[1]));
                        try (Descriptor source = new Descriptor(data)) {
                            WriteOperation op = connector.beginWrite(source, RdmaMetadata.fromJson(parts[3]));
                            end(op);
                            out.println("WROTE " + op.notificationKey() + " " + op.status() + " " + crc(data));
                        }
                    }
                    case "stats" -> out.println("STATS " + connector.registeredBytes() + " " + connector.inFlightOperations());
                    case "producer" -> {
                        byte[] data = data(Long.parseLong(words[2]), Integer.parseInt(words[1]));
                        try (Connector producer = new Connector(ConnectorOptions.builder()
                                .workerId("producer-" + ProcessHandle.current().pid() + "-" + System.nanoTime())
                                .transports(EmbeddedSettings.defaults()).build());
                             Descriptor descriptor = new Descriptor(data)) {
                            ReadableOperation op = producer.createReadable(descriptor);
                            out.println("META " + op.metadata().toJson());
                            end(op);
                            out.println("GONE " + op.notificationKey() + " " + op.status());
                        }
                    }
                    case "tryread" -> {
                        RdmaMetadata metadata = RdmaMetadata.fromJson(line.trim().substring(8));
                        try (Descriptor target = Descriptor.allocate(metadata.totalSize())) {
                            ReadOperation op = connector.beginRead(metadata, target);
                            op.waitForCompletion(Duration.ofSeconds(60));
                            out.println("READ " + op.notificationKey() + " " + op.status() + " " + crc(target.toByteArray()));
                        } catch (RuntimeException e) {
                            StringBuilder message = new StringBuilder();
                            for (Throwable t = e; t != null; t = t.getCause()) {
                                message.append(t == e ? "" : " / caused by: ").append(t);
                                for (Throwable suppressed : t.getSuppressed()) {
                                    message.append(" / suppressed: ").append(suppressed);
                                }
                            }
                            out.println("FAILED " + message.toString().replace('\n', ' '));
                        }
                    }
                    case "hoard" -> {
                        try {
                            while (true) {
                                hoard.add(new FileInputStream("/dev/null"));
                            }
                        } catch (IOException e) {
                            out.println("HOARDED " + hoard.size() + " " + e.getMessage());
                        }
                    }
                    case "free" -> {
                        for (FileInputStream file : hoard) {
                            file.close();
                        }
                        out.println("FREED " + hoard.size());
                        hoard.clear();
                    }
                    case "peers" -> {
                        PeerStatistics peers = connector.peerStatistics();
                        out.println("PEERS " + peers.cachedPeers() + " " + peers.openConnections() + " "
                                + peers.departedPeersClosed() + " " + peers.idleConnectionsClosed() + " "
                                + peers.evictions() + " " + socketFds());
                    }
                    case "exit" -> {
                        return;
                    }
                    default -> out.println("ERROR unknown command " + words[0]);
                }
            }
        } finally {
            for (Descriptor descriptor : owned) {
                try {
                    descriptor.close();
                } catch (IllegalStateException ignored) {
                    // still in use while exiting: the process ends anyway
                }
            }
        }
    }
}
