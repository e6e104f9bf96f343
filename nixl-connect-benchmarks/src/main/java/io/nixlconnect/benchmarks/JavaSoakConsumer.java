package io.nixlconnect.benchmarks;

import static io.nixlconnect.benchmarks.NixlSoak.BLOCK;
import static io.nixlconnect.benchmarks.NixlSoak.BLOCKS;
import static io.nixlconnect.benchmarks.NixlSoak.POOL;

import io.nixlconnect.Connector;
import io.nixlconnect.Descriptor;
import io.nixlconnect.NixlConnectException;
import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.SerializedDescriptor;
import io.nixlconnect.TransferTimeoutException;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/** The first pass's consumer: this JVM, a Connector on NIXL with one registered pool the blocks are slices of. */
final class JavaSoakConsumer implements SoakConsumer {

    private final SoakFigures figures;
    private final SplittableRandom random;
    private final Connector connector = NixlSoak.connector("soak-consumer");
    private final Descriptor pool = Descriptor.allocate(POOL);
    private final long idleRegistrations;

    JavaSoakConsumer(SoakFigures figures, SplittableRandom random) {
        this.figures = figures;
        this.random = random;
        pool.registerMemory(connector);
        idleRegistrations = connector.registeredBytes();
    }

    @Override
    public boolean transfer(RdmaMetadata metadata, boolean read, boolean again) {
        List<Descriptor> blocks = blocks();
        long began = System.nanoTime();
        boolean ok = attempt(metadata, blocks, read);
        if (ok) {
            figures.succeeded(System.nanoTime() - began);
            if (read) {
                List<SerializedDescriptor> remote = metadata.descriptors();
                for (int i = 0; i < blocks.size(); i++) {
                    long got = blocks.get(i).asByteBuffer(0, 8).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
                    if (got != remote.get(i).ptr()) {
                        figures.count("WRONG BYTES");
                        figures.miss("a READ returned wrong bytes");
                        break;
                    }
                }
            }
        }
        if (again && attempt(metadata, blocks, read)) {
            figures.miss("spent metadata was read again without an error");
        }
        blocks.forEach(Descriptor::close);
        return ok;
    }

    private boolean attempt(RdmaMetadata metadata, List<Descriptor> blocks, boolean read) {
        figures.operation();
        long began = System.nanoTime();
        try {
            if (read) {
                connector.read(metadata, blocks);
            } else {
                connector.write(blocks, metadata);
            }
            return true;
        } catch (NixlConnectException e) {
            figures.failed(cause(e), System.nanoTime() - began);
            return false;
        } catch (RuntimeException e) {
            figures.count("UNTYPED " + e.getClass().getSimpleName() + ": " + e.getMessage());
            figures.miss("an operation failed with an untyped exception: " + e);
            return false;
        }
    }

    private static String cause(NixlConnectException e) {
        String message = String.valueOf(e.getMessage());
        if (e instanceof TransferTimeoutException) {
            return "timeout";
        } else if (message.contains("window this metadata describes is gone")) {
            return message.contains("already completed") ? "spent metadata refused (expected)" : "window gone / peer failed";
        } else if (message.contains("cannot take new metadata")) {
            return "peer busy";
        }
        return e.getClass().getSimpleName() + ": " + message.substring(0, Math.min(90, message.length()));
    }

    /** {@link NixlSoak#BLOCKS} distinct blocks of the pool, in random order. */
    private List<Descriptor> blocks() {
        return NixlSoak.randomBlocks(pool, random, BLOCKS, BLOCK);
    }

    @Override
    public SoakChild startDoomedReader() throws Exception {
        return SoakChild.java("reader");
    }

    @Override
    public long rssKiB() throws Exception {
        return NixlSoak.rssKiB(Path.of("/proc/self/status"));
    }

    @Override
    public String describe() throws Exception {
        Runtime runtime = Runtime.getRuntime();
        return String.format("heap %d KiB, RSS %d KiB, peers %d, registered %d bytes, in flight %d",
                (runtime.totalMemory() - runtime.freeMemory()) >> 10, rssKiB(), connector.remoteAgentCount(),
                connector.registeredBytes(), connector.inFlightOperations());
    }

    @Override
    public List<String> notIdle() throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while ((connector.registeredBytes() != idleRegistrations || connector.inFlightOperations() != 0)
                && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        List<String> problems = new ArrayList<>();
        if (connector.registeredBytes() != idleRegistrations || connector.inFlightOperations() != 0) {
            problems.add("consumer not back to idle: registered " + connector.registeredBytes() + " (idle "
                    + idleRegistrations + "), in flight " + connector.inFlightOperations());
        }
        if (connector.remoteAgentCount() > 2) {
            problems.add("consumer holds " + connector.remoteAgentCount() + " peers");
        }
        return problems;
    }

    @Override
    public String end() {
        pool.close();
        connector.close();
        return null;
    }
}
