package io.nixlconnect.transport;

import org.jspecify.annotations.Nullable;

/**
 * How a transfer's bytes moved, as its transport reports it ({@code Operation.attributes()}, and the
 * {@code backend} tag of metrics and observations). Complete once the transfer has ended. A passive operation learns
 * nothing of the path its peer chose: it reports only its {@code transport}.
 *
 * @param transport {@code "embedded"} or {@code "nixl"}: the connector's backend
 * @param backend   the path the transport chose: the NIXL plugin (e.g. {@code "UCX"}), or {@code "tcp"} on the
 *                  embedded transport; null while not known (NIXL before the end, a passive operation)
 * @param peer      the peer's {@code host:port} (embedded transport); null elsewhere
 * @param streams   connections the bytes went over: more than 1 when the embedded transport striped a large transfer,
 *                  otherwise 1
 * @param telemetry NIXL's own measurements of the transfer, where it captured them; null elsewhere
 */
public record TransferAttributes(String transport, @Nullable String backend, @Nullable String peer, int streams,
        @Nullable Telemetry telemetry) {

    /**
     * @throws IllegalArgumentException if {@code transport} is null or {@code streams < 1}
     */
    public TransferAttributes {
        if (transport == null) {
            throw new IllegalArgumentException("transport must not be null");
        }
        if (streams < 1) {
            throw new IllegalArgumentException("streams must be at least 1, was " + streams);
        }
    }

    /** Only the transport's name: what a passive operation, or a transfer that reported nothing yet, knows. */
    public static TransferAttributes of(String transport) {
        return new TransferAttributes(transport, null, null, 1, null);
    }

    /**
     * NIXL's telemetry of one transfer request ({@code nixlXferTelemetry}).
     *
     * @param postMicros     time to post the request
     * @param transferMicros time from post to completion
     * @param bytes          bytes moved
     * @param descriptors    descriptors moved
     */
    public record Telemetry(long postMicros, long transferMicros, long bytes, long descriptors) {
    }
}
