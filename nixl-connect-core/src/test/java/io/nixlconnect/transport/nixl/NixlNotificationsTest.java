package io.nixlconnect.transport.nixl;

import com.sun.jna.Native;
import com.sun.jna.Pointer;
import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryType;
import io.nixlconnect.transport.TransferOp;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static io.nixlconnect.transport.nixl.NixlAgents.key;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Notifications taken off a native agent's map and handed to the dispatcher. The receiver is a bare native agent
 * (no {@link NixlAgentCore}, so no progress loop takes its notifications first); the sender is an agent of the
 * transport, which sends a notification alone with a transfer of empty regions, and failure reports.
 */
class NixlNotificationsTest {

    private static final MemoryRegion EMPTY = new MemoryRegion(0, 0, MemoryType.DRAM, 0);
    private static final Duration WAIT = Duration.ofSeconds(20);
    @RegisterExtension
    final NixlAgents agents = new NixlAgents();
    private NixlAgentCore sender;
    private long receiver;
    private String receiverName;
    private NixlBackends receiverBackends;
    private final NotificationDispatcher dispatcher = new NotificationDispatcher(16, 1 << 16);
    private final NixlNotifications notifications = new NixlNotifications("notifications-test", dispatcher);

    @BeforeEach
    void twoAgents() {
        sender = agents.open("notifying");
        receiverName = "notified-" + System.nanoTime();
        long[] handle = new long[1];
        NixlAgentCore.check(NixlCapi.nixl_capi_create_configured_agent(receiverName,
                NixlCapi.agentConfig(false, 0, NixlCapi.THREAD_SYNC_STRICT), handle), "create agent");
        receiver = handle[0];
        receiverBackends = new NixlBackends(List.of("UCX"), Map.of());
        receiverBackends.create(receiver);
        notifications.createMap();
        assertThat(sender.loadRemote(metadataOf(receiver))).isEqualTo(receiverName);
    }

    @AfterEach
    void closeAgents() {
        if (sender != null) {
            sender.close(); // unloads the receiver first
        }
        if (receiver != 0) {
            notifications.destroyMap();
            receiverBackends.destroy();
            NixlCapi.nixl_capi_destroy_agent(receiver);
        }
    }

    private static byte[] metadataOf(long agent) {
        long[] data = new long[1];
        long[] len = new long[1];
        NixlAgentCore.check(NixlCapi.nixl_capi_get_local_md(agent, data, len), "get local metadata");
        try {
            return new Pointer(data[0]).getByteArray(0, Math.toIntExact(len[0]));
        } finally {
            Native.free(data[0]);
        }
    }

    /** A transfer with nothing to move: NIXL sends its notification alone. */
    private void send(byte[] notification) {
        sender.post(TransferOp.WRITE, List.of(EMPTY), receiverName, List.of(EMPTY), notification, false);
    }

    @Test
    void aNotificationGoesToTheWindowWaitingForIt() {
        NotificationDispatcher.Waiter waiter = dispatcher.await(key("plain"));
        send(key("plain"));
        await().atMost(WAIT).until(() -> {
            notifications.drainIfDue(receiver, System.nanoTime());
            return waiter.future.isDone();
        });
        assertThat(waiter.future).isCompleted();
        assertThat(notifications.receivedCount()).isEqualTo(1);
    }

    @Test
    void aFailureReportGoesToTheWindowWaitingAloneForTheKeyItNames() {
        NotificationDispatcher.Waiter waiter = dispatcher.await(key("failed"));
        List<String> reports = new CopyOnWriteArrayList<>();
        waiter.onPeerFailure = (peer, cause) -> reports.add(peer + ": " + cause);
        sender.reportFailure(receiverName, key("failed"), "the read timed out");
        await().atMost(WAIT).until(() -> {
            notifications.drainIfDue(receiver, System.nanoTime());
            return !reports.isEmpty();
        });
        assertThat(reports).containsExactly(sender.name() + ": the read timed out");
        assertThat(waiter.future).as("the window decides what a report means").isNotDone();
        assertThat(dispatcher.bufferedCount()).as("a report is never buffered as a notification").isZero();
    }

    @Test
    void whileAWindowWaitsEveryRoundDrainsWhateverTheClockSays() {
        long now = System.nanoTime();
        notifications.drainIfDue(receiver, now);
        NotificationDispatcher.Waiter waiter = dispatcher.await(key("awaited"));
        send(key("awaited"));
        await().atMost(WAIT).until(() -> {
            notifications.drainIfDue(receiver, now); // the clock stands still
            return waiter.future.isDone();
        });
    }

    @Test
    void withoutAWindowWaitingItDrainsAtMostEveryMillisecond() throws Exception {
        NotificationDispatcher.Waiter connected = dispatcher.await(key("connect"));
        send(key("connect"));
        long[] clock = {System.nanoTime()};
        await().atMost(WAIT).until(() -> {
            notifications.drainIfDue(receiver, clock[0]);
            return connected.future.isDone();
        });
        long lastDrain = clock[0];

        send(key("early"));
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(300);
        while (System.nanoTime() < until) {
            assertThat(notifications.drainIfDue(receiver, lastDrain + NixlNotifications.UNAWAITED_DRAIN_NANOS - 1))
                    .as("not a millisecond since the last drain").isZero();
            Thread.sleep(1);
        }
        assertThat(dispatcher.bufferedCount()).isZero();

        await().atMost(WAIT).until(() -> {
            clock[0] += NixlNotifications.UNAWAITED_DRAIN_NANOS;
            notifications.drainIfDue(receiver, clock[0]);
            return dispatcher.bufferedCount() == 1;
        });
        assertThat(notifications.receivedCount()).isEqualTo(2);
    }
}
