package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The books of a descriptor's memory, without a transport: uses refuse close, a drain holds the memory (owned memory is
 * freed by the last drain, borrowed memory makes close wait), memory a stalled peer may reach goes to the keeper, and a
 * slice's uses and drains count on its original. The "memory" is a recorder of its own freeing at an address never read.
 */
class MemoryLedgerTest {

    private static final long SIZE = 4096;

    private final Descriptor view = new Descriptor(0x10000, SIZE, Device.CPU, null);
    private final RecordedMemory memory = new RecordedMemory();

    @Test
    void aLiveUseRefusesCloseNamingTheCountAndTheLastReleaseAllowsIt() {
        MemoryLedger ledger = owning(memory);
        ledger.acquireUse();
        ledger.acquireUse();
        assertThatThrownBy(ledger::close).isInstanceOf(IllegalStateException.class)
                .hasMessage("Descriptor " + view + " is still in use by 2 live operation(s); close or wait for them first");
        ledger.releaseUse();
        assertThatThrownBy(ledger::close).hasMessageContaining("in use by 1 live operation(s)");
        assertThat(memory.freed).isFalse();
        ledger.releaseUse();
        ledger.close();
        assertThat(memory.freed).isTrue();
        assertThatThrownBy(ledger::acquireUse).hasMessage("Descriptor " + view + " is closed");
        ledger.close(); // idempotent
    }

    @Test
    void ownedMemoryClosedWhileDrainingIsFreedByTheLastDrainAndCloseReturnsAtOnce() {
        MemoryLedger ledger = owning(memory);
        ledger.acquireUse();
        ledger.acquireUse();
        ledger.beginDrain();
        ledger.beginDrain();
        ledger.close();
        assertThat(memory.freed).as("a transport may still touch it").isFalse();
        assertThatThrownBy(ledger::acquireUse).hasMessage("Descriptor " + view + " is closed");
        ledger.endDrain(null);
        assertThat(memory.freed).isFalse();
        ledger.endDrain(null);
        assertThat(memory.freed).isTrue();
    }

    @Test
    void borrowedMemoryMakesCloseWaitUntilTheTransportReleasesIt() throws InterruptedException {
        MemoryLedger ledger = new MemoryLedger(view, null, null);
        ledger.acquireUse();
        ledger.beginDrain();
        Thread closing = new Thread(ledger::close, "closing");
        closing.start();
        awaitWaiting(closing);
        ledger.endDrain(null);
        closing.join(10_000);
        assertThat(closing.isAlive()).isFalse();
        assertThatThrownBy(ledger::acquireUse).hasMessage("Descriptor " + view + " is closed");
    }

    @Test
    void aUseTakenWhileCloseWaitsForTheDrainMakesThatCloseRefuse() throws InterruptedException {
        MemoryLedger ledger = new MemoryLedger(view, null, null);
        ledger.acquireUse();
        ledger.beginDrain();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread closing = new Thread(() -> {
            try {
                ledger.close();
            } catch (Throwable e) {
                failure.set(e);
            }
        }, "closing");
        closing.start();
        awaitWaiting(closing);
        ledger.acquireUse(); // not closed yet: an operation may start
        ledger.endDrain(null);
        closing.join(10_000);
        assertThat(failure.get()).as("close returned while an operation uses the memory")
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("in use by 1 live operation(s)");
        ledger.ensureOpen();
        ledger.releaseUse();
        ledger.close();
        assertThatThrownBy(ledger::ensureOpen).hasMessage("Descriptor " + view + " is closed");
    }

    @Test
    void memoryAStalledPeerMayReachGoesToTheKeeperWithItsSizeAndIsKeptReachableOnce() {
        MemoryLedger ledger = owning(memory);
        List<AutoCloseable> kept = new ArrayList<>();
        List<Long> residentBytes = new ArrayList<>();
        MemoryKeeper keeper = (what, bytes) -> {
            kept.add(what);
            residentBytes.add(bytes);
        };
        ledger.acquireUse();
        ledger.acquireUse();
        ledger.beginDrain();
        ledger.beginDrain();
        ledger.endDrain(keeper);
        ledger.endDrain(keeper);
        assertThat(kept).as("one holder keeps the memory reachable, however many drains").hasSize(1);
        ledger.close();
        assertThat(memory.freed).isFalse();
        assertThat(kept).hasSize(2).last().isSameAs(memory);
        assertThat(residentBytes).containsExactly(0L, SIZE);
    }

    @Test
    void aSlicesUsesAndDrainsCountOnItsOriginal() {
        MemoryLedger original = owning(memory);
        Descriptor sliceView = new Descriptor(0x10000, 16, Device.CPU, null);
        MemoryLedger slice = new MemoryLedger(sliceView, original, null);
        slice.acquireUse();
        assertThatThrownBy(original::close).hasMessageContaining("in use by 1 live operation(s)");
        assertThatThrownBy(slice::close).hasMessage("Descriptor " + sliceView
                + " is still in use by 1 live operation(s); close or wait for them first");
        slice.beginDrain();
        slice.close(); // a slice owns nothing: nothing to wait for
        original.close();
        assertThat(memory.freed).as("the slice's operation still drains").isFalse();
        slice.endDrain(null);
        assertThat(memory.freed).isTrue();
    }

    @Test
    void aSliceOfAClosedOriginalRefusesUseAndReads() {
        MemoryLedger original = owning(memory);
        MemoryLedger slice = new MemoryLedger(new Descriptor(0x10000, 16, Device.CPU, null), original, null);
        original.close();
        slice.ensureOpen(); // the slice itself is open
        assertThatThrownBy(slice::acquireUse).hasMessage("Descriptor " + view + " is closed");
        assertThatThrownBy(slice::ensureReadable).hasMessage("Cannot read a slice of closed descriptor " + view);
    }

    @Test
    void descriptorsAndTheirSlicesShareTheOriginalsLedger() {
        Descriptor descriptor = Descriptor.allocate(SIZE);
        Descriptor slice = descriptor.slice(1024, 1024).slice(0, 16);
        slice.acquireUse();
        assertThatThrownBy(descriptor::close).hasMessageContaining("in use by 1 live operation(s)");
        slice.releaseUse();
        descriptor.close();
        assertThatThrownBy(slice::toByteArray).hasMessage("Cannot read a slice of closed descriptor " + descriptor);
        assertThatThrownBy(slice::acquireUse).hasMessage("Descriptor " + descriptor + " is closed");
    }

    private MemoryLedger owning(AutoCloseable owned) {
        MemoryLedger ledger = new MemoryLedger(view, null, null);
        ledger.own(owned);
        return ledger;
    }

    /** Until {@code thread} waits on a monitor: the close waits for the drain. */
    private static void awaitWaiting(Thread thread) {
        await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(1))
                .until(() -> thread.getState() == Thread.State.WAITING);
    }

    private static final class RecordedMemory implements AutoCloseable {
        volatile boolean freed;

        @Override
        public void close() {
            assertThat(freed).as("freed twice").isFalse();
            freed = true;
        }
    }
}
