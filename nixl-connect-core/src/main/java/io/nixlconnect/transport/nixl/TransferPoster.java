package io.nixlconnect.transport.nixl;

import io.nixlconnect.cuda.DeviceContext;
import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.TransferHandle;
import io.nixlconnect.transport.TransferOp;
import io.nixlconnect.transport.PeerNotLoadedException;
import io.nixlconnect.transport.TransportException;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * Posts one NIXL agent's transfers to its loaded peers: checks a transfer, creates and posts its request (a transfer
 * with nothing to move sends its notification alone), hands one still in progress to {@link TransfersInFlight}, and
 * says what a failed transfer most likely means. Takes the agent's lifecycle read lock itself.
 */
final class TransferPoster {

    private final NixlAgentCore core;
    private final NixlPeers peers;
    private final TransfersInFlight inFlight;
    private final ProgressLoop progress;
    private volatile long posted;

    TransferPoster(NixlAgentCore core, NixlPeers peers, TransfersInFlight inFlight, ProgressLoop progress) {
        this.core = core;
        this.peers = peers;
        this.inFlight = inFlight;
        this.progress = progress;
    }

    /**
     * Creates and posts a request. {@code callerPolls}: the caller polls it on its own thread straight away
     * ({@link TransfersInFlight#pollOnWaitingThread}), so the progress loop is not woken for it; it still sees the
     * transfer in flight at its next round (an interrupted caller leaves it to the loop).
     */
    TransferHandle post(TransferOp op, List<MemoryRegion> local, String remote, List<MemoryRegion> remoteRegions,
            byte[] notification, boolean callerPolls) {
        NixlRequests.validateTransfer(op, local, remote, remoteRegions);
        String description = op + " of " + local.size() + " region(s) " + (op == TransferOp.READ ? "from " : "to ")
                + remote;
        // Empty pairs are legal on the wire and move nothing; NIXL refuses empty descriptors.
        List<MemoryRegion> localData = new ArrayList<>(local.size());
        List<MemoryRegion> remoteData = new ArrayList<>(local.size());
        for (int i = 0; i < local.size(); i++) {
            if (local.get(i).length() > 0) {
                localData.add(local.get(i));
                remoteData.add(remoteRegions.get(i));
            }
        }
        core.lifecycle.readLock().lock();
        try {
            core.ensureOpen();
            long agent = core.handle();
            NixlTransfer transfer;
            Runnable outcome = null;
            // Holding the peer's read lock so it cannot be replaced or evicted between creating the request and
            // posting it; other peers' loads and posts go on meanwhile.
            ReentrantReadWriteLock.ReadLock peer = peers.use(remote);
            if (peer == null) {
                throw new PeerNotLoadedException("remote agent '" + remote + "' is not loaded in NIXL agent "
                        + core.name() + "; load its metadata first");
            }
            try {
                if (localData.isEmpty()) {
                    sendNotification(agent, remote, notification, description);
                    transfer = NixlTransfer.completedWithoutData(core, remote, description);
                } else {
                    // Local GPU memory: its device's context is current while NIXL/UCX create and post.
                    try (DeviceContext context = NixlCudaSupport.contextFor(localData)) {
                        long request = NixlRequests.createRequest(agent, op, localData, remote, remoteData, notification, description);
                        transfer = new NixlTransfer(core, remote, request, description,
                                NixlCudaSupport.cudaDeviceOf(localData), callerPolls);
                        synchronized (transfer) {
                            int status = NixlCapi.nixl_capi_post_xfer_req(agent, request, 0);
                            if (status == NixlCapi.IN_PROGRESS) {
                                inFlight.add(transfer);
                            } else if (status == NixlCapi.SUCCESS) {
                                outcome = transfer.finish(status);
                            } else {
                                transfer.finish(status);
                                throw failure(remote, "NIXL agent " + core.name() + " could not post "
                                        + description, status);
                            }
                        }
                    }
                }
            } finally {
                peer.unlock();
            }
            posted++;
            // Completion callbacks run outside our locks: they may call back into this agent.
            if (outcome != null) {
                outcome.run();
            } else if (!callerPolls && !transfer.state().isTerminal()) {
                progress.wake();
            }
            return transfer;
        } finally {
            core.lifecycle.readLock().unlock();
        }
    }

    /**
     * A transfer whose pairs are all empty still owes the peer its notification: NIXL sends it on its
     * own ({@code genNotif}), in order with earlier notifications to that peer.
     */
    private void sendNotification(long agent, String remote, byte[] notification, String description) {
        if (notification == null) {
            return;
        }
        int status = NixlCapi.nixl_capi_gen_notif(agent, remote, notification, notification.length, 0);
        if (status != NixlCapi.SUCCESS) {
            throw new TransportException("NIXL agent " + core.name() + " could not send the notification of "
                    + description + " (no data to move): " + NixlCapi.statusName(status));
        }
    }

    /**
     * A transfer to {@code remote} failed ({@code what}: "could not post …" or "… failed"): the peer is torn down at
     * its next load ({@link NixlPeers#markBroken}), and the error says what most likely happened. A peer refuses a
     * transfer whose window is gone (its operation completed, was closed or timed out) the way it refuses a dead
     * peer's: UCX fails the endpoint; NIXL cannot tell which.
     */
    TransportException failure(String remote, String what, int status) {
        peers.markBroken(remote);
        return new TransportException(what + ": " + NixlCapi.statusName(status) + ". Most likely the window this"
                + " metadata describes is gone (its operation on the peer completed, was closed or timed out: metadata"
                + " serves one transfer per reader), or the peer died or restarted. The connection to '" + remote
                + "' is made anew with the next metadata");
    }

    /** Transfers posted (health). */
    long postedCount() {
        return posted;
    }
}
