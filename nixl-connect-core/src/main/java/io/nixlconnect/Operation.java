package io.nixlconnect;

import io.nixlconnect.transport.TransferAttributes;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

/**
 * One transfer as callers and {@link OperationListener}s see it: passive ({@link ReadableOperation},
 * {@link WritableOperation}: local buffers published for a peer) or active ({@link ReadOperation},
 * {@link WriteOperation}: this side moves the bytes). Its status ends in COMPLETE, CANCELLED or ERRORED; every
 * resource it holds (registrations, windows) is released as soon as it ends, whether or not it is closed.
 * Closing an unfinished operation cancels it.
 */
public sealed interface Operation extends AutoCloseable permits AbstractOperation {

    /** READ or WRITE. */
    OperationKind operationKind();

    /** Where the operation is; a terminal status never changes again. */
    OperationStatus status();

    /**
     * The notification that completes the passive side. On the embedded transport it is also the credential that
     * opens the passive side's memory to a peer: hand it only to that peer (in the metadata) and never log it; use
     * {@link #notificationKeyFingerprint()} to name the operation in logs and traces.
     */
    String notificationKey();

    /**
     * A short, non-secret fingerprint of {@link #notificationKey()} (12 hex digits of its SHA-256), the same on
     * both sides of a transfer: what {@code toString()}, exception messages and observations show instead of
     * the key.
     */
    String notificationKeyFingerprint();

    /** The local descriptors, in order. */
    List<Descriptor> localDescriptors();

    /** Memory kind of the local descriptors. */
    DeviceKind deviceKind();

    /** Bytes over all local descriptors. */
    long totalBytes();

    /** Whether this side publishes its buffers and waits for the peer (readable, writable) rather than moving bytes. */
    boolean isPassive();

    /** The connector that created it. */
    Connector connector();

    /** Time from creation to the end, or to now while running. */
    Duration duration();

    /**
     * How the bytes moved: {@code "cross-memory-attach"} (embedded transport, a peer on this host read directly
     * with one copy), {@code "tcp"} (embedded transport over its socket), {@code "nixl"}; null while no bytes have
     * moved (a passive operation no peer has reached yet).
     */
    @Nullable String transferPath();

    /**
     * Why the operation errored or was cancelled; {@code null} otherwise. Always an exception of this package: a
     * transport's own failure (the SPI's {@code TransportException}, an I/O error) comes as a
     * {@link TransportFailureException} with it as the cause.
     */
    @Nullable Throwable failure();

    /**
     * How the bytes moved, as the transport reports it: always the transport ({@code embedded} or {@code nixl}); for
     * an active operation once it has ended, the backend it chose ({@code UCX}…, or {@code tcp} on the embedded
     * transport) and, on NIXL, its telemetry of the transfer; the embedded transport adds the peer's address and the
     * connections a striped transfer went over. A passive operation learns nothing of the path its peer chose.
     */
    TransferAttributes attributes();

    /**
     * A future that completes when the operation completes, or exceptionally with a {@link TransferException}
     * when it errors or is cancelled. Each call returns a new dependent future, so completing or cancelling it
     * does not affect the operation.
     */
    CompletableFuture<Void> completion();

    /**
     * Blocks until the operation ends. The calling thread would only wait meanwhile, so an active operation puts it
     * to work (small operations are mostly thread hand-offs): on the embedded transport it runs a transfer of at most
     * 64 KiB that no transport thread has started yet (an interrupt while it runs there ends the operation ERRORED,
     * as the interrupted socket closes); on NIXL it polls the transfer's status itself, as a caller of NIXL's own
     * API does, instead of being woken by the agent's progress thread (an interrupt only stops the polling).
     *
     * @throws TransferException if it errored (also at its own time limit: then a {@link TransferTimeoutException})
     *                           or was cancelled, or the thread was interrupted
     */
    void waitForCompletion();

    /**
     * Blocks until the operation ends or {@code timeout} elapses. A wait that runs out throws
     * {@link WaitTimeoutException}: the caller gave up, the operation goes on (close it to stop it).
     *
     * @throws WaitTimeoutException if {@code timeout} elapsed first; the operation is still running
     * @throws TransferException    if it errored (also at its own time limit: then a {@link TransferTimeoutException}
     *                              with status ERRORED) or was cancelled
     */
    void waitForCompletion(Duration timeout);

    /** Cancels the operation if it has not ended, and releases everything it holds. Idempotent. */
    @Override
    void close();
}
