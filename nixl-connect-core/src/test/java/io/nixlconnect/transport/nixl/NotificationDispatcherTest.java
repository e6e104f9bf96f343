package io.nixlconnect.transport.nixl;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class NotificationDispatcherTest {

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void completesTheWaiterWithExactlyThoseBytes() {
        NotificationDispatcher dispatcher = new NotificationDispatcher(16, 1024);
        NotificationDispatcher.Waiter a = dispatcher.await(bytes("key-a"));
        NotificationDispatcher.Waiter ab = dispatcher.await(bytes("key-ab"));

        dispatcher.deliver(bytes("key-a"));

        assertThat(a.future).isCompleted();
        assertThat(ab.future).isNotDone();
        assertThat(dispatcher.waitingCount()).isEqualTo(1);
    }

    @Test
    void oneNotificationCompletesOneWaiterInArrivalOrder() {
        NotificationDispatcher dispatcher = new NotificationDispatcher(16, 1024);
        NotificationDispatcher.Waiter first = dispatcher.await(bytes("k"));
        NotificationDispatcher.Waiter second = dispatcher.await(bytes("k"));

        dispatcher.deliver(bytes("k"));
        assertThat(first.future).isCompleted();
        assertThat(second.future).isNotDone();

        dispatcher.deliver(bytes("k"));
        assertThat(second.future).isCompleted();
    }

    @Test
    void aFanOutWaiterCompletesOnItsLastNotificationCountingEarlyOnes() {
        NotificationDispatcher dispatcher = new NotificationDispatcher(16, 1024);
        dispatcher.deliver(bytes("fan"));
        NotificationDispatcher.Waiter fan = dispatcher.await(bytes("fan"), 3);
        assertThat(dispatcher.received(fan)).isEqualTo(1);
        assertThat(dispatcher.bufferedCount()).isZero();

        dispatcher.deliver(bytes("fan"));
        assertThat(fan.future).isNotDone();
        assertThat(dispatcher.received(fan)).isEqualTo(2);
        dispatcher.deliver(bytes("fan"));
        assertThat(fan.future).isCompleted();
        assertThat(dispatcher.received(fan)).isEqualTo(3);
        assertThat(dispatcher.waitingCount()).isZero();

        dispatcher.deliver(bytes("fan")); // a fourth reader: nobody waits, it is buffered like any early one
        assertThat(dispatcher.bufferedCount()).isEqualTo(1);
        assertThatThrownBy(() -> dispatcher.await(bytes("x"), 0)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aNotificationArrivingBeforeItsWindowIsKept() {
        NotificationDispatcher dispatcher = new NotificationDispatcher(16, 1024);
        dispatcher.deliver(bytes("early"));
        assertThat(dispatcher.bufferedCount()).isEqualTo(1);

        NotificationDispatcher.Waiter late = dispatcher.await(bytes("early"));

        assertThat(late.future).isCompleted();
        assertThat(dispatcher.bufferedCount()).isZero();
        assertThat(dispatcher.await(bytes("early")).future).isNotDone();
    }

    @Test
    void theEarlyBufferIsBoundedAndDropsTheOldest() {
        NotificationDispatcher dispatcher = new NotificationDispatcher(3, 1024);
        for (int i = 0; i < 10; i++) {
            dispatcher.deliver(bytes("n" + i));
        }
        assertThat(dispatcher.bufferedCount()).isEqualTo(3);
        assertThat(dispatcher.droppedCount()).isEqualTo(7);
        assertThat(dispatcher.await(bytes("n0")).future).isNotDone();
        assertThat(dispatcher.await(bytes("n9")).future).isCompleted();
    }

    @Test
    void theEarlyBufferIsBoundedInBytes() {
        NotificationDispatcher dispatcher = new NotificationDispatcher(100, 10);
        dispatcher.deliver(bytes("0123456"));
        dispatcher.deliver(bytes("abcdefg"));
        assertThat(dispatcher.bufferedCount()).isEqualTo(1);
        dispatcher.deliver(new byte[11]);
        assertThat(dispatcher.bufferedCount()).isEqualTo(1);
        assertThat(dispatcher.droppedCount()).isEqualTo(2);
    }

    @Test
    void cancellingAWaitFailsItsFutureAndLeavesOthers() {
        NotificationDispatcher dispatcher = new NotificationDispatcher(16, 1024);
        NotificationDispatcher.Waiter cancelled = dispatcher.await(bytes("k"));
        NotificationDispatcher.Waiter kept = dispatcher.await(bytes("k"));

        dispatcher.cancel(cancelled);
        dispatcher.deliver(bytes("k"));

        assertThatThrownBy(cancelled.future::join).isInstanceOf(CancellationException.class);
        assertThat(kept.future).isCompleted();
    }

    @Test
    void failAllFailsEveryWaiter() {
        NotificationDispatcher dispatcher = new NotificationDispatcher(16, 1024);
        NotificationDispatcher.Waiter a = dispatcher.await(bytes("a"));
        NotificationDispatcher.Waiter b = dispatcher.await(bytes("b"));
        dispatcher.failAll(new IllegalStateException("closed"));
        assertThat(a.future).isCompletedExceptionally();
        assertThat(b.future).isCompletedExceptionally();
        assertThat(dispatcher.waitingCount()).isZero();
    }

    @Test
    void aFailureReportTellsTheLoneWaiterAndLeavesItWaitingButNotAFanOutOneNorALaterOne() {
        NotificationDispatcher dispatcher = new NotificationDispatcher(16, 1024);
        NotificationDispatcher.Waiter alone = dispatcher.await(bytes("0123456789abcdef"));
        NotificationDispatcher.Waiter fanOut = dispatcher.await(bytes("fedcba9876543210"), 2);
        List<String> told = new ArrayList<>();
        alone.onPeerFailure = (peer, cause) -> told.add(peer + ": " + cause);
        fanOut.onPeerFailure = (peer, cause) -> told.add("fan-out " + peer);

        assertThat(dispatcher.peerFailed(bytes("0123456789abcdef"), "reader-1", "quoting 0123456789abcdef")).isTrue();
        assertThat(dispatcher.peerFailed(bytes("fedcba9876543210"), "reader-2", "cancelled")).isFalse();
        assertThat(dispatcher.peerFailed(bytes("no-such-key-here"), "reader-3", "cancelled")).isFalse();

        assertThat(told).containsExactly("reader-1: quoting <notification key>");
        assertThat(alone.future).as("the window decides; the drain still waits for the notification").isNotDone();
        assertThat(dispatcher.bufferedCount()).as("reports are never buffered").isZero();
        NotificationDispatcher.Waiter later = dispatcher.await(bytes("no-such-key-here"));
        assertThat(later.future).isNotDone();
        dispatcher.deliver(bytes("0123456789abcdef"));
        assertThat(alone.future).isCompleted();
    }
}
