package io.nixlconnect.transport.nixl;

import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryRegistration;
import io.nixlconnect.transport.PassiveWindow;
import io.nixlconnect.transport.PeerCounts;
import io.nixlconnect.transport.TransferHandle;
import io.nixlconnect.transport.TransferOp;
import io.nixlconnect.transport.TransportAgent;

import java.lang.ref.Cleaner;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * The {@link TransportAgent} handed out by {@link NixlTransport}: a thin face over
 * {@link NixlAgentCore}. The core is what the progress thread references, so an agent dropped
 * without {@link #close()} becomes unreachable and the {@link Cleaner} closes its core (a safety
 * net only; close agents explicitly).
 */
final class NixlAgent implements TransportAgent {

    private static final Cleaner CLEANER = Cleaner.create();

    private final NixlAgentCore core;
    private final Cleaner.Cleanable cleanable;

    NixlAgent(NixlAgentCore core) {
        this.core = core;
        this.cleanable = CLEANER.register(this, core::close);
    }

    NixlAgentCore core() {
        return core;
    }

    @Override
    public String name() {
        return core.name();
    }

    @Override
    public Map<String, Object> details() {
        return core.details();
    }

    @Override
    public boolean isServing() {
        return core.isServing();
    }

    @Override
    public MemoryRegistration registerMemory(MemoryRegion region) {
        return core.register(region);
    }

    @Override
    public byte[] localMetadata() {
        return core.localMetadata();
    }

    /** Only {@code registered}'s memory sections, and the connection info: see {@link NixlAgentCore#localMetadata(List)}. */
    @Override
    public byte[] localMetadata(List<MemoryRegion> registered) {
        return core.localMetadata(registered);
    }

    @Override
    public boolean localMetadataEquals(byte[] known, List<MemoryRegion> registered) {
        return java.util.Arrays.equals(known, core.localMetadata(registered));
    }

    @Override
    public String loadRemoteAgent(byte[] metadata) {
        return core.loadRemote(metadata);
    }

    /** Loads the peer (UCX creates its endpoint and sends its wire-up request) and keeps progressing it: see {@link NixlAgentCore#introduce}. */
    @Override
    public CompletableFuture<String> introducePeer(byte[] metadata) {
        return CompletableFuture.completedFuture(core.introduce(metadata));
    }

    @Override
    public int remoteAgentCount() {
        return core.remoteCount();
    }

    @Override
    public PeerCounts peerCounts() {
        return core.peerCounts();
    }

    @Override
    public TransferHandle postTransfer(TransferOp op, List<MemoryRegion> local, String remoteAgentName,
            List<MemoryRegion> remote, byte[] notification) {
        return core.post(op, local, remoteAgentName, remote, notification, false);
    }

    /** The caller polls the transfer on its own thread next: the progress loop is not woken for it. */
    @Override
    public TransferHandle postTransferForWaitingCaller(TransferOp op, List<MemoryRegion> local, String remoteAgentName,
            List<MemoryRegion> remote, byte[] notification) {
        return core.post(op, local, remoteAgentName, remote, notification, true);
    }

    @Override
    public void reportFailure(String remoteAgentName, byte[] notification, String cause) {
        core.reportFailure(remoteAgentName, notification, cause);
    }

    @Override
    public PassiveWindow openWindow(TransferOp access, List<MemoryRegion> regions, byte[] notification,
            int notifications) {
        return core.openWindow(access, regions, notification, notifications);
    }

    @Override
    public void close() {
        cleanable.clean();
    }

    @Override
    public String toString() {
        return "NixlAgent[" + core.name() + "]";
    }
}
