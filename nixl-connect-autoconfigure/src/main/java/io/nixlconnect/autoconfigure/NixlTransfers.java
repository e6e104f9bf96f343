package io.nixlconnect.autoconfigure;

import io.nixlconnect.Connector;
import io.nixlconnect.Descriptor;
import io.nixlconnect.Operation;
import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.ReadableOperation;
import io.nixlconnect.SerializedDescriptor;
import io.nixlconnect.TransferException;
import io.nixlconnect.TransferTimeoutException;
import io.nixlconnect.WaitTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * What the {@link Connector} lacks for application code in a Spring application, and nothing it already has:
 * {@link #await} waits with the configured {@code nixl.connect.operation-timeout} as the default, so controllers
 * need no timeout of their own; {@link #publish(byte[])} publishes a copy of a {@code byte[]} and frees it when the
 * operation ends; {@link #readInto} and {@link #readBytes} read a peer's buffers into fresh memory sized from its
 * metadata. The connector's own operations ({@code createReadable}, {@code createWritable}, {@code beginRead},
 * {@code beginWrite}, {@code read}, {@code write}) are called on the injected {@link Connector} bean.
 */
public class NixlTransfers {

    private final Connector connector;
    private final Duration operationTimeout;

    public NixlTransfers(Connector connector, Duration operationTimeout) {
        this.connector = connector;
        this.operationTimeout = operationTimeout;
    }

    /**
     * Publishes a copy of {@code data} for one peer to read. The copy is freed once the operation ends
     * (completed, errored or cancelled).
     */
    public ReadableOperation publish(byte[] data) {
        return publish(1, data);
    }

    /**
     * Publishes a copy of {@code data} for {@code readers} peers to read (fan-out), each with the same metadata. The
     * copy is freed once the operation ends: after the last reader, or when it errs or is cancelled.
     */
    public ReadableOperation publish(int readers, byte[] data) {
        Descriptor copy = new Descriptor(data);
        ReadableOperation operation;
        try {
            operation = connector.createReadable(readers, copy);
        } catch (RuntimeException e) {
            copy.close();
            throw e;
        }
        // Runs after the operation has released the descriptor, so closing it cannot fail as "in use".
        operation.completion().whenComplete((ignored, error) -> copy.close());
        return operation;
    }

    /**
     * Reads a peer's readable buffers into newly allocated host memory, one buffer per remote descriptor,
     * and returns once the read has completed ({@link Connector#read}: bounded by the operation timeout, a small read
     * runs on the calling thread).
     *
     * @return the filled buffers, in the metadata's order; the caller owns and closes them
     * @throws io.nixlconnect.TransferException if the read fails or times out (the buffers are then freed)
     */
    public List<Descriptor> readInto(RdmaMetadata remote) {
        List<Descriptor> buffers = new ArrayList<>(remote.descriptors().size());
        try {
            for (SerializedDescriptor descriptor : remote.descriptors()) {
                buffers.add(Descriptor.allocate(descriptor.size()));
            }
            connector.read(remote, buffers);
            return buffers;
        } catch (RuntimeException e) {
            for (Descriptor buffer : buffers) {
                buffer.close();
            }
            throw e;
        }
    }

    /** Reads a peer's readable buffers and returns their bytes, concatenated in the metadata's order. */
    public byte[] readBytes(RdmaMetadata remote) {
        long total = remote.totalSize();
        if (total > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("Remote buffers of " + total + " bytes do not fit a byte[]; use readInto");
        }
        byte[] result = new byte[(int) total];
        List<Descriptor> buffers = readInto(remote);
        try {
            int offset = 0;
            for (Descriptor buffer : buffers) {
                byte[] bytes = buffer.toByteArray();
                System.arraycopy(bytes, 0, result, offset, bytes.length);
                offset += bytes.length;
            }
        } finally {
            for (Descriptor buffer : buffers) {
                buffer.close();
            }
        }
        return result;
    }

    /**
     * Waits for {@code operation} to end, at most the configured operation timeout.
     *
     * @throws WaitTimeoutException if it has not ended in time (it goes on; close it to stop it)
     * @throws TransferException    if it errored (a {@link TransferTimeoutException} at its own time limit) or was
     *                              cancelled
     */
    public <T extends Operation> T await(T operation) {
        operation.waitForCompletion(operationTimeout);
        return operation;
    }
}
