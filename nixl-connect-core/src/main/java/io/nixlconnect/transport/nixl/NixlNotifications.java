package io.nixlconnect.transport.nixl;

import com.sun.jna.Pointer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.nixlconnect.transport.nixl.NixlAgentCore.check;

/**
 * Takes the notifications one NIXL agent received off its notification map and hands them, in the order they came,
 * to the {@link NotificationDispatcher}: a key to the window waiting for it, a peer's failure report
 * ({@link FailureNotification}) to the window waiting alone for the key it names. Owns the map; every method runs
 * while the agent lives (in its constructor, or under its lifecycle lock on the progress thread). Logs under
 * {@link NixlAgentCore}'s logger, as before.
 */
final class NixlNotifications {

    private static final Logger log = LoggerFactory.getLogger(NixlAgentCore.class);
    /**
     * How often the loop drains notifications while no window waits for one. {@code getNotifs} holds
     * NIXL's agent-wide lock and progresses UCX until idle, so calling it every round made callers'
     * request creation and posting wait for the lock; notifications that no window awaits only need
     * collecting (they are buffered), not speed.
     */
    static final long UNAWAITED_DRAIN_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

    private final String agentName;
    private final NotificationDispatcher dispatcher;
    private final long[] out = new long[2];
    private long map;
    private long lastDrainNanos; // progress thread only
    private volatile long received;
    private volatile long failureReportsDropped;

    NixlNotifications(String agentName, NotificationDispatcher dispatcher) {
        this.agentName = agentName;
        this.dispatcher = dispatcher;
    }

    /** Creates the map NIXL fills; once, as the agent is created. */
    void createMap() {
        long[] handle = new long[1];
        check(NixlCapi.nixl_capi_create_notif_map(handle), "create notification map");
        map = handle[0];
    }

    /** Frees the map, if it was created; before the agent is destroyed. */
    void destroyMap() {
        if (map != 0) {
            NixlCapi.nixl_capi_destroy_notif_map(map);
            map = 0;
        }
    }

    /**
     * Drains {@code agent}'s notifications when it is time ({@code now}, from {@link System#nanoTime}): every round
     * while a window waits for one, else at most every {@link #UNAWAITED_DRAIN_NANOS}. Returns how many it handed on.
     */
    int drainIfDue(long agent, long now) {
        if (dispatcher.waitingCount() > 0 || now - lastDrainNanos >= UNAWAITED_DRAIN_NANOS) {
            lastDrainNanos = now;
            return drain(agent);
        }
        return 0;
    }

    private int drain(long agent) {
        int status = NixlCapi.nixl_capi_get_notifs(agent, map, 0);
        if (status != NixlCapi.SUCCESS) {
            return 0;
        }
        long[] size = out;
        NixlCapi.nixl_capi_notif_map_size(map, size);
        long agents = size[0];
        if (agents == 0) {
            return 0;
        }
        // Notifications (byte[]), and the failure reports among them (FailureNotification.Received), in the
        // order they came: a reader that failed and then read again is seen in that order.
        List<Object> taken = new ArrayList<>();
        long[] data = new long[1];
        long[] len = new long[1];
        for (long a = 0; a < agents; a++) {
            if (NixlCapi.nixl_capi_notif_map_get_agent_at(map, a, data) != NixlCapi.SUCCESS) {
                continue;
            }
            String from = new Pointer(data[0]).getString(0);
            NixlCapi.nixl_capi_notif_map_get_notifs_size(map, from, size);
            long count = size[0];
            for (long i = 0; i < count; i++) {
                if (NixlCapi.nixl_capi_notif_map_get_notif(map, from, i, data, len) == NixlCapi.SUCCESS) {
                    byte[] bytes = len[0] == 0 ? new byte[0] : new Pointer(data[0]).getByteArray(0, (int) len[0]);
                    if (FailureNotification.isReport(bytes)) {
                        FailureNotification.Received report = FailureNotification.parse(bytes, from);
                        if (report != null) {
                            taken.add(report);
                        } else {
                            failureReportsDropped++; // malformed
                        }
                    } else {
                        taken.add(bytes);
                    }
                }
            }
        }
        NixlCapi.nixl_capi_notif_map_clear(map);
        received += taken.size();
        for (Object each : taken) {
            if (each instanceof byte[] notification) {
                dispatcher.deliver(notification);
            } else if (each instanceof FailureNotification.Received report
                    && !dispatcher.peerFailed(report.key(), report.peer(), report.cause())) {
                // Most often late: the reader's transfer completed (and notified) after all, or the operation ended.
                failureReportsDropped++;
                log.debug("NIXL agent {}: a failure report from {} names no operation waiting alone for it; dropped",
                        agentName, report.peer());
            }
        }
        return taken.size();
    }

    /** Notifications and failure reports taken off the map so far (health). */
    long receivedCount() {
        return received;
    }

    /**
     * Failure reports that ended no operation (health): malformed, or naming no operation that waits alone for its
     * key — one that completed or ended before the report came, a fan-out readable, or none at all.
     */
    long failureReportsDroppedCount() {
        return failureReportsDropped;
    }
}
