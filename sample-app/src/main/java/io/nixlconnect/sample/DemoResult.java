package io.nixlconnect.sample;

import java.util.ArrayList;
import java.util.List;

/**
 * The outcome of the demo flow: the READ and the WRITE, the connector's {@code nixl} health as the actuator
 * reports it, and the {@code nixl.transfer.bytes} meter of this worker's active transfers.
 */
public record DemoResult(String worker, String backend, String producerUrl, TransferResult read, TransferResult write,
        String health, String endpoint, Long transferredBytes) {

    /** Whether both transfers completed with matching checksums and the connector is UP. */
    public boolean ok() {
        return read.ok() && write.ok() && "UP".equals(health);
    }

    /** The human-readable report the demo prints. */
    public List<String> lines() {
        List<String> lines = new ArrayList<>();
        lines.add("nixl-connect demo (" + backend + " transport, worker " + worker + ", producer " + producerUrl + ")");
        lines.add(read.summary());
        lines.add(write.summary());
        lines.add("health: nixl " + health + " (backend " + backend + (endpoint == null ? "" : ", endpoint " + endpoint)
                + ")   metrics: "
                + "nixl.transfer.bytes{role=active} = " + (transferredBytes == null ? "n/a" : transferredBytes));
        lines.add(ok() ? "result: OK" : "result: FAILED");
        return lines;
    }
}
