package io.nixlconnect.transport;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

/**
 * One transport endpoint: registers local memory, publishes metadata, loads peers and moves bytes.
 *
 * <p>Reference counting of memory registrations is the caller's business (the connector caches them). Peers are
 * the agent's: it decides how long a loaded peer stays loaded, and releases everything on {@link #close()}.
 */
public interface TransportAgent extends AutoCloseable {

    /** The agent's name, unique among the peers it talks to. */
    String name();

    /** Details for health reports: the backend's own counters and settings. Never null; no null values. */
    Map<String, Object> details();

    /** {@code host:port} peers connect to, where the backend has one address; {@code null} otherwise. */
    default @Nullable String endpoint() {
        return null;
    }

    /** Whether the agent is alive and able to serve peers (its listener runs, its progress thread runs). */
    boolean isServing();

    /**
     * Registers a region of local memory with the transport.
     *
     * @throws TransportException if the backend refuses the region (memory type unsupported, not pinnable)
     */
    MemoryRegistration registerMemory(MemoryRegion region);

    /**
     * This agent's metadata, as a peer needs it to reach this agent and the memory registered with
     * it. The raw bytes: the caller compresses and encodes them for the wire.
     */
    byte[] localMetadata();

    /**
     * Whether {@link #localMetadata()} would return bytes equal to {@code known} now: lets a caller that encoded it
     * once (every passive operation publishes it) skip fetching a fresh copy. Default: compares a fresh copy.
     */
    default boolean localMetadataEquals(byte[] known) {
        return Arrays.equals(known, localMetadata());
    }

    /**
     * This agent's metadata for a peer whose transfers stay within {@code registered} (regions registered through
     * {@link #registerMemory}, as registered): a backend whose metadata describes every registration (NIXL's carries
     * each one's key) may leave the others out, so that an operation's metadata does not grow with what else is
     * registered. Default: {@link #localMetadata()}. A backend that overrides it overrides {@link
     * #localMetadataEquals(byte[], List)} too.
     */
    default byte[] localMetadata(List<MemoryRegion> registered) {
        return localMetadata();
    }

    /** Whether {@link #localMetadata(List)} would return bytes equal to {@code known} now. Default: {@link #localMetadataEquals(byte[])}. */
    default boolean localMetadataEquals(byte[] known, List<MemoryRegion> registered) {
        return localMetadataEquals(known);
    }

    /**
     * Loads a peer from its metadata, so transfers can target it. Idempotent and cheap when the same metadata is
     * already loaded; metadata that changed (the peer restarted) replaces the peer of that name. The agent owns
     * the peer's lifetime: it keeps it loaded at least while transfers to it are in flight, and unloads it when it
     * chooses (at {@link #close()} at the latest); a caller only loads, before every transfer. {@code metadata} may
     * be shared read-only with the caller: the agent may keep it but never changes it.
     *
     * @return the peer's agent name, as {@link #postTransfer} takes it
     * @throws TransportException if the metadata is not this backend's or is malformed
     */
    String loadRemoteAgent(byte[] metadata);

    /**
     * Makes a peer known before its first operation (a service that discovers a new worker introduces it), so that
     * the first operation does not pay for connecting: {@link #loadRemoteAgent} and whatever else the backend does to
     * be ready for that peer (a connection opened, an endpoint wired up). The returned future completes with the peer's
     * agent name once that is done or under way (the backend says which), or exceptionally with a
     * {@link TransportException} when the peer cannot be reached. Default: {@link #loadRemoteAgent}, done.
     *
     * @throws TransportException if the metadata is not this backend's or is malformed (at once, not in the future)
     */
    default CompletableFuture<String> introducePeer(byte[] metadata) {
        return CompletableFuture.completedFuture(loadRemoteAgent(metadata));
    }

    /** Peers loaded now. */
    int remoteAgentCount();

    /**
     * How this agent holds its peers: connections open now, and peers evicted, reconnected, departed and connections
     * closed when idle since it was created. Cheap (read on every health check and scrape); {@link PeerCounts#NONE}
     * once closed.
     */
    PeerCounts peerCounts();

    /**
     * Posts one transfer of descriptor-list pairs; {@code local.get(i)} pairs with {@code remote.get(i)}
     * and both have the same length. On success the peer receives {@code notification}, after the
     * data has landed. The caller hands the lists and the notification over: the agent may keep them as they are,
     * and the caller does not change them afterwards.
     *
     * @throws TransportException if the request cannot even be posted (unknown peer, unregistered memory)
     */
    TransferHandle postTransfer(TransferOp op, List<MemoryRegion> local, String remoteAgentName,
            List<MemoryRegion> remote, byte[] notification);

    /**
     * {@link #postTransfer} for a caller that blocks until the transfer ends, on this thread, straight away: it calls
     * {@link TransferHandle#runOnWaitingThread()} next, unless its thread is interrupted, and otherwise cancels the
     * transfer. A backend may therefore leave a transfer it would run on a thread of its own for that call to run,
     * sparing the wake-up of its thread; when the call finds the thread interrupted, the backend hands the transfer to
     * its own threads then. Default: {@link #postTransfer}.
     *
     * @throws TransportException as {@link #postTransfer}
     */
    default TransferHandle postTransferForWaitingCaller(TransferOp op, List<MemoryRegion> local, String remoteAgentName,
            List<MemoryRegion> remote, byte[] notification) {
        return postTransfer(op, local, remoteAgentName, remote, notification);
    }

    /**
     * Tells a peer, best effort, that the transfer to it posted with {@code notification} ended without delivering it
     * (it failed, timed out or was cancelled), so that the passive operation waiting for that notification ends
     * ERRORED at once, naming this agent and {@code cause}, rather than at its own timeout. The connector calls it
     * once per such transfer, from any thread: it returns without waiting for the peer and never throws. A peer that
     * does not know the report ignores it (a Python Dynamo worker matches only its own exact notification key).
     * Default: nothing, and the peer waits for its own timeout.
     *
     * @param cause why the transfer ended, for the peer's exceptions and logs; the backend bounds its length
     */
    default void reportFailure(String remoteAgentName, byte[] notification, String cause) {
    }

    /**
     * Opens a passive window: the listed regions become reachable by peers for {@code access}, and the
     * window's {@link PassiveWindow#notified()} completes when a peer sends {@code notification}.
     * Backends that cannot restrict remote access (NIXL exposes every registered region) still dispatch
     * the notification. Closing the window makes the regions unreachable again. The caller hands the list and the
     * notification over: the agent may keep them as they are, and the caller does not change them afterwards.
     */
    default PassiveWindow openWindow(TransferOp access, List<MemoryRegion> regions, byte[] notification) {
        return openWindow(access, regions, notification, 1);
    }

    /**
     * As {@link #openWindow(TransferOp, List, byte[])} for {@code notifications} peers (fan-out): the window stays
     * open, and {@link PassiveWindow#notified()} completes, once that many copies of {@code notification} have
     * arrived.
     *
     * @param notifications how many notifications end the window; at least 1
     */
    PassiveWindow openWindow(TransferOp access, List<MemoryRegion> regions, byte[] notification, int notifications);

    /** Closes every window and transfer, deregisters all memory, unloads all peers. Idempotent. */
    @Override
    void close();
}
