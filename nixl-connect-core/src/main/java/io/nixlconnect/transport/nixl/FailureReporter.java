package io.nixlconnect.transport.nixl;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * Sends one NIXL agent's failure reports ({@link FailureNotification}) to its loaded peers, and says while a report
 * sent lately still needs the progress loop at its busy pace. Takes the agent's lifecycle read lock itself. Logs
 * under {@link NixlAgentCore}'s logger, as before.
 */
final class FailureReporter {

    private static final Logger log = LoggerFactory.getLogger(NixlAgentCore.class);
    /**
     * How long after sending a failure report the loop keeps progressing UCX at its busy pace. Over TCP the report
     * goes out behind whatever of the released transfer UCX still had queued to that peer (a cancelled WRITE's
     * bytes), and only as fast as this agent's worker is progressed: idle, the loop progresses it every 10 ms.
     */
    static final long REPORT_PROGRESS_NANOS = TimeUnit.SECONDS.toNanos(1);

    private final NixlAgentCore core;
    private final NixlPeers peers;
    private final ProgressLoop progress;
    /** When the last failure report was sent (see {@link #REPORT_PROGRESS_NANOS}); 0: never. */
    private volatile long lastReportNanos;

    FailureReporter(NixlAgentCore core, NixlPeers peers, ProgressLoop progress) {
        this.core = core;
        this.peers = peers;
        this.progress = progress;
    }

    /**
     * Sends {@code remote} a {@link FailureNotification} for {@code notification} (see
     * {@code TransportAgent#reportFailure}): one {@code genNotif}, which queues the message and returns. Best effort:
     * a peer no longer loaded, a closed agent or NIXL's refusal drop it, logged at DEBUG; never throws.
     */
    void report(String remote, byte[] notification, String cause) {
        byte[] report = FailureNotification.encode(notification, cause);
        if (report == null) {
            return;
        }
        core.lifecycle.readLock().lock();
        try {
            long agent = core.handle();
            if (agent == 0) {
                return;
            }
            int status;
            ReentrantReadWriteLock.ReadLock peer = peers.use(remote); // not unloaded until the send returns
            if (peer == null) {
                log.debug("NIXL agent {}: failure report to {} dropped: the peer is no longer loaded", core.name(),
                        remote);
                return;
            }
            try {
                status = NixlCapi.nixl_capi_gen_notif(agent, remote, report, report.length, 0);
            } finally {
                peer.unlock();
            }
            if (status != NixlCapi.SUCCESS) {
                log.debug("NIXL agent {}: failure report to {} not sent: {}", core.name(), remote,
                        NixlCapi.statusName(status));
            } else {
                long now = System.nanoTime();
                lastReportNanos = now == 0 ? 1 : now;
                progress.wake();
            }
        } catch (RuntimeException e) {
            log.debug("NIXL agent {}: failure report to {} not sent", core.name(), remote, e);
        } finally {
            core.lifecycle.readLock().unlock();
        }
    }

    /** Whether a report went out within the last {@link #REPORT_PROGRESS_NANOS}. */
    boolean sentLately() {
        long report = lastReportNanos;
        return report != 0 && System.nanoTime() - report < REPORT_PROGRESS_NANOS;
    }
}
