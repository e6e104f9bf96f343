package io.nixlconnect.transport.nixl;

import io.nixlconnect.cuda.Cuda;
import io.nixlconnect.cuda.DeviceContext;
import io.nixlconnect.transport.TransferAttributes;
import io.nixlconnect.transport.TransferHandle;
import io.nixlconnect.transport.TransferState;
import io.nixlconnect.transport.TransportException;

import java.util.concurrent.CompletableFuture;

/**
 * One posted NIXL transfer request. The agent's progress thread polls it; {@link #cancel()} may race
 * with that poll, so every native call on the request happens under this object's lock and the
 * request is released exactly once.
 */
final class NixlTransfer implements TransferHandle {

    private final NixlAgentCore agent;
    private final String remote;
    private final String description;
    private final CompletableFuture<Void> completion = new CompletableFuture<>();
    /** The CUDA device of the local memory, whose context is current while polling; -1 for host memory. */
    private final int cudaDevice;
    /** NIXL's request until released (0 after); volatile: {@link #holdsRequest} reads it without the lock. */
    private volatile long request;
    private volatile TransferState state = TransferState.IN_PROGRESS;
    private volatile TransferAttributes attributes = TransferAttributes.of("nixl");
    /** Whether the thread waiting for this transfer polls it (the progress loop then leaves it alone). */
    volatile boolean polledByWaitingThread;
    /** Posted for a caller that polls it itself ({@link NixlAgentCore#post}): the progress loop was not woken for it. */
    final boolean postedForPollingCaller;

    NixlTransfer(NixlAgentCore agent, String remote, long request, String description, int cudaDevice,
            boolean postedForPollingCaller) {
        this.agent = agent;
        this.remote = remote;
        this.request = request;
        this.description = description;
        this.cudaDevice = cudaDevice;
        this.postedForPollingCaller = postedForPollingCaller;
    }

    /**
     * A transfer that had nothing to move (every region pair empty): NIXL has no request for it, it is
     * done at once. Its notification, if any, was sent on its own beforehand.
     */
    static NixlTransfer completedWithoutData(NixlAgentCore agent, String remote, String description) {
        NixlTransfer transfer = new NixlTransfer(agent, remote, 0, description, -1, false);
        transfer.state = TransferState.DONE;
        transfer.completion.complete(null);
        return transfer;
    }

    /** The peer this transfer targets. */
    String remote() {
        return remote;
    }

    @Override
    public TransferState state() {
        return state;
    }

    @Override
    public CompletableFuture<Void> completion() {
        return completion;
    }

    @Override
    public String path() {
        return "nixl";
    }

    /**
     * Polls this transfer on the waiting thread until it ends (see {@link NixlAgentCore#pollOnWaitingThread}): that
     * thread would only block, and being woken by the progress thread costs a thread hand-off per operation.
     */
    @Override
    public void runOnWaitingThread() {
        agent.pollOnWaitingThread(this);
    }

    /**
     * Once the request has ended, the backend NIXL chose (e.g. {@code UCX}) and, where NIXL captured it, its
     * telemetry of the request.
     */
    @Override
    public TransferAttributes attributes() {
        return attributes;
    }

    /** Reads what NIXL says about the ended request, before it is released; call with the lock held. */
    private void captureAttributes() {
        if (request == 0) {
            return;
        }
        String backend = agent.chosenBackend(request);
        long[] measured = new long[8];
        TransferAttributes.Telemetry telemetry =
                NixlCapi.xferTelemetry(agent.handle(), request, measured) == NixlCapi.SUCCESS
                        ? new TransferAttributes.Telemetry(measured[1], measured[2], measured[3], measured[4])
                        : null;
        attributes = new TransferAttributes("nixl", backend, null, 1, telemetry);
    }

    /**
     * Checks the request once (progress thread, or the waiting thread). Returns true when the transfer has ended, and
     * then has released the request and completed the future.
     */
    boolean poll() {
        Runnable outcome;
        synchronized (this) {
            if (state.isTerminal()) {
                return true;
            }
            int status = checkStatus();
            if (status == NixlCapi.IN_PROGRESS) {
                return false;
            }
            captureAttributes();
            outcome = settle(status);
        }
        // The waiting caller first: releasing the finished request is bookkeeping (cancel and abandon
        // leave a terminal transfer alone, and the agent cannot close while this loop round runs).
        outcome.run();
        synchronized (this) {
            release();
        }
        return true;
    }

    /** What {@link #pollOnce()} returns for a transfer that had ended before (its future was completed then). */
    static final Runnable ALREADY_ENDED = () -> { };

    /**
     * Checks the request once for the thread that waits for it; call with the agent's lifecycle lock held. When the
     * transfer has ended, records the result, releases the request and returns what completes the future, for the
     * caller to run once it has let go of the agent's lock; null while the request is in progress.
     */
    Runnable pollOnce() {
        synchronized (this) {
            if (state.isTerminal()) {
                return ALREADY_ENDED;
            }
            int status = checkStatus();
            return status == NixlCapi.IN_PROGRESS ? null : finish(status);
        }
    }

    /** NIXL's status of the request, with the local GPU memory's context current; call with the lock held. */
    private int checkStatus() {
        try (DeviceContext context = cudaDevice < 0 ? null : Cuda.open().enterDevice(cudaDevice)) {
            return NixlCapi.nixl_capi_get_xfer_status(agent.handle(), request);
        }
    }

    /** Records the result of post or a status check and releases the request; call with the lock held. */
    Runnable finish(int status) {
        captureAttributes();
        release();
        return settle(status);
    }

    /** Records the result; returns what completes the future, to run outside the lock. */
    private Runnable settle(int status) {
        if (status == NixlCapi.SUCCESS) {
            state = TransferState.DONE;
            return () -> completion.complete(null);
        }
        state = TransferState.ERROR;
        TransportException error = agent.transferFailure(remote, "NIXL transfer " + description
                + " failed", status);
        return () -> completion.completeExceptionally(error);
    }

    @Override
    public void cancel() {
        agent.lifecycle.readLock().lock();
        try {
            cancelLocked();
        } finally {
            agent.lifecycle.readLock().unlock();
        }
    }

    private void cancelLocked() {
        synchronized (this) {
            if (state.isTerminal()) {
                return;
            }
            // NIXL's releaseXferReq aborts an in-flight request in the backend before returning.
            if (!release()) {
                throw new TransportException("NIXL refused to release transfer " + description
                        + "; it may still be in progress");
            }
            state = TransferState.CANCELLED;
        }
        agent.forget(this);
        completion.cancel(false);
    }

    /** Cancels on agent close; never throws. */
    void abandon(String why) {
        synchronized (this) {
            if (state.isTerminal()) {
                return;
            }
            release();
            state = TransferState.CANCELLED;
        }
        completion.completeExceptionally(new TransportException("transfer " + description + " cancelled: " + why));
    }

    /**
     * Whether NIXL's request is not released yet: until then its peer must stay loaded, even once the transfer has
     * ended (the progress loop completes the caller's future first and releases the request after).
     */
    boolean holdsRequest() {
        return request != 0;
    }

    private boolean release() {
        if (request == 0) {
            return true;
        }
        int released = NixlCapi.nixl_capi_release_xfer_req(agent.handle(), request);
        if (released != NixlCapi.SUCCESS) {
            return false;
        }
        NixlCapi.nixl_capi_destroy_xfer_req(request);
        request = 0;
        return true;
    }

    @Override
    public String toString() {
        return "NixlTransfer[" + description + ", " + state + "]";
    }
}
