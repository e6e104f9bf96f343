package io.nixlconnect.sample;

import io.nixlconnect.Connector;
import io.nixlconnect.Descriptor;
import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.ReadableOperation;
import io.nixlconnect.WritableOperation;
import io.nixlconnect.autoconfigure.NixlTransfers;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnExpression;
import org.springframework.stereotype.Service;

/**
 * The producer's tensors: one published tensor, filled at start-up, that peers read (each read through its
 * own {@link ReadableOperation}), and writable buffers that peers ask for by name and write into.
 */
@Service
@ConditionalOnExpression(ProducerTensors.PRODUCER_ROLE)
public class ProducerTensors implements DisposableBean {

    /** Active for {@code sample.role=producer} and {@code both}. */
    static final String PRODUCER_ROLE = "'${sample.role:both}'.equalsIgnoreCase('producer')"
            + " or '${sample.role:both}'.equalsIgnoreCase('both')";

    private static final Logger log = LoggerFactory.getLogger(ProducerTensors.class);
    private static final long TENSOR_SEED = 1;
    private static final int MAX_PENDING_WRITES = 16;

    private final Connector connector;
    private final NixlTransfers transfers;
    private final TensorMemory memory;
    private final long maxWritableSize;
    private final Map<String, Published> published = new ConcurrentHashMap<>();
    private final Set<ReadableOperation> readables = ConcurrentHashMap.newKeySet();
    private final Map<String, PendingWrite> writes = new ConcurrentHashMap<>();

    private record Published(Descriptor tensor, TensorInfo info) {
    }

    private record PendingWrite(Descriptor buffer, WritableOperation operation) {
    }

    public ProducerTensors(Connector connector, NixlTransfers transfers, TensorMemory memory, SampleProperties properties) {
        this.connector = connector;
        this.transfers = transfers;
        this.memory = memory;
        this.maxWritableSize = properties.getMaxWritableSize().toBytes();
        String name = TensorNames.check(properties.getTensorName());
        long size = properties.getTensorSize().toBytes();
        Descriptor tensor = memory.allocate(size);
        try {
            memory.fill(tensor, TENSOR_SEED);
            TensorInfo info = new TensorInfo(name, size, memory.device(), Checksums.hex(memory.crc32c(tensor)));
            published.put(name, new Published(tensor, info));
            log.info("Producer: tensor '{}' of {} bytes on {} ready (crc32c {})", name, size, info.device(), info.crc32c());
        } catch (RuntimeException e) {
            tensor.close();
            throw e;
        }
    }

    public List<TensorInfo> list() {
        List<TensorInfo> infos = new ArrayList<>();
        published.values().forEach(p -> infos.add(p.info()));
        return infos;
    }

    public TensorInfo info(String name) {
        return find(name).info();
    }

    /**
     * Publishes the tensor for one read: a fresh {@link ReadableOperation} per call, since one readable
     * serves one read. Readables nobody reads end with {@code nixl.connect.passive-timeout}.
     */
    public RdmaMetadata publish(String name) {
        Published tensor = find(name);
        ReadableOperation readable = connector.createReadable(tensor.tensor());
        readables.add(readable);
        readable.completion().whenComplete((ignored, error) -> readables.remove(readable));
        return readable.metadata();
    }

    /** Makes a fresh buffer of {@code size} bytes writable under {@code name}, replacing one not yet checked. */
    public RdmaMetadata createWritable(String name, long size) {
        TensorNames.check(name);
        if (size <= 0 || size > maxWritableSize) {
            throw new IllegalArgumentException("size must be between 1 and " + maxWritableSize
                    + " bytes (sample.max-writable-size), was " + size);
        }
        if (!writes.containsKey(name) && writes.size() >= MAX_PENDING_WRITES) {
            throw new IllegalStateException("Too many writable buffers pending (" + MAX_PENDING_WRITES
                    + "); check or let them time out first");
        }
        Descriptor buffer = memory.allocate(size);
        WritableOperation writable;
        try {
            writable = connector.createWritable(buffer);
        } catch (RuntimeException e) {
            buffer.close();
            throw e;
        }
        PendingWrite previous = writes.put(name, new PendingWrite(buffer, writable));
        if (previous != null) {
            release(previous);
        }
        return writable.metadata();
    }

    /**
     * Waits (up to the operation timeout) for the peer's write into {@code name}, then returns the CRC32C of
     * what it wrote and frees the buffer.
     */
    public WriteReport awaitWrite(String name) {
        PendingWrite pending = writes.get(TensorNames.check(name));
        if (pending == null) {
            throw new NoSuchElementException("No writable buffer named '" + name + "'");
        }
        try {
            transfers.await(pending.operation());
            long crc = memory.crc32c(pending.buffer());
            return new WriteReport(name, pending.buffer().size(), pending.operation().status().name(), Checksums.hex(crc));
        } finally {
            if (writes.remove(name, pending)) {
                release(pending);
            }
        }
    }

    private Published find(String name) {
        Published tensor = published.get(name);
        if (tensor == null) {
            throw new NoSuchElementException("No tensor named '" + name + "'");
        }
        return tensor;
    }

    private static void release(PendingWrite pending) {
        pending.operation().close(); // cancels it if the peer has not written yet; releases the buffer
        pending.buffer().close();
    }

    /** Cancels what peers have not read or written yet, then frees the tensors (before the connector closes). */
    @Override
    public void destroy() {
        readables.forEach(ReadableOperation::close);
        writes.values().forEach(ProducerTensors::release);
        writes.clear();
        published.values().forEach(p -> p.tensor().close());
        published.clear();
    }
}
