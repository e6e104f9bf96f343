package io.nixlconnect.transport.nixl;

import io.nixlconnect.transport.TransferState;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The set of an agent's transfers in flight, with transfers that hold no NIXL request (a transfer in progress made
 * with request 0, and one completed without data), so that nothing here reaches NIXL unless the set polls a transfer
 * it should leave alone.
 */
class TransfersInFlightTest {

    @RegisterExtension
    final NixlAgents agents = new NixlAgents();
    private NixlAgentCore core;
    private TransfersInFlight inFlight;

    @BeforeEach
    void openAgent() {
        core = agents.open("in-flight-test");
        inFlight = new TransfersInFlight(core, new ProgressLoop("unstarted", core, false));
    }

    private NixlTransfer inProgress(String remote) {
        return new NixlTransfer(core, remote, 0, "READ of 1 region(s) from " + remote, -1, false);
    }

    private NixlTransfer ended(String remote) {
        return NixlTransfer.completedWithoutData(core, remote, "WRITE of 1 region(s) to " + remote);
    }

    @Test
    void aPeersTransfersInFlightAreThoseNotEndedYet() {
        NixlTransfer running = inProgress("peer-a");
        inFlight.add(running);
        inFlight.add(ended("peer-a"));
        inFlight.add(inProgress("peer-b"));

        assertThat(inFlight.count()).isEqualTo(3);
        assertThat(inFlight.countTo("peer-a")).as("the ended one is on its way out").isEqualTo(1);
        assertThat(inFlight.countTo("peer-c")).isZero();
        assertThat(inFlight.completionsTo("peer-a")).containsExactly(running.completion());
        assertThat(inFlight.remotes()).containsExactlyInAnyOrder("peer-a", "peer-b");
    }

    @Test
    void theLoopsRoundLeavesTransfersTheirWaitingThreadsPollAndRemovesThoseThatEnded() {
        NixlTransfer waitedFor = inProgress("peer-a");
        waitedFor.polledByWaitingThread = true;
        inFlight.add(waitedFor);
        inFlight.add(ended("peer-a"));

        int ended;
        core.lifecycle.readLock().lock();
        try {
            ended = inFlight.pollRound();
        } finally {
            core.lifecycle.readLock().unlock();
        }
        assertThat(ended).isEqualTo(1);
        assertThat(inFlight.count()).isEqualTo(1);
        assertThat(waitedFor.state()).as("not polled by the loop").isEqualTo(TransferState.IN_PROGRESS);
    }

    @Test
    void aTransferThatEndedBeforeItsWaitingThreadPolledLeavesAtOnceAndIsNotCountedAsEndedThere() {
        NixlTransfer transfer = ended("peer-a");
        inFlight.add(transfer);
        inFlight.pollOnWaitingThread(transfer);
        assertThat(inFlight.count()).isZero();
        assertThat(inFlight.endedOnWaitingThreads()).isZero();
        assertThat(transfer.polledByWaitingThread).isFalse();
    }

    @Test
    void anInterruptedWaitingThreadLeavesItsTransferToTheLoop() {
        NixlTransfer transfer = inProgress("peer-a");
        inFlight.add(transfer);
        Thread.currentThread().interrupt();
        try {
            inFlight.pollOnWaitingThread(transfer);
            assertThat(Thread.currentThread().isInterrupted()).as("the interrupt stays set").isTrue();
        } finally {
            Thread.interrupted();
        }
        assertThat(inFlight.count()).isEqualTo(1);
        assertThat(transfer.polledByWaitingThread).as("the loop polls it again").isFalse();
        assertThat(inFlight.anyPolledByTheLoop()).isTrue();
    }

    @Test
    void onceTheAgentIsDestroyedTheWaitingThreadStopsPolling() {
        NixlTransfer transfer = inProgress("peer-a");
        inFlight.add(transfer);
        core.close();
        inFlight.pollOnWaitingThread(transfer); // returns: closing abandons transfers
        assertThat(transfer.state()).isEqualTo(TransferState.IN_PROGRESS);
        assertThat(inFlight.count()).isEqualTo(1);
    }

    @Test
    void abandoningCancelsTheTransfersNotEndedNamingWhyAndEmptiesTheSet() {
        NixlTransfer running = inProgress("peer-a");
        NixlTransfer done = ended("peer-b");
        inFlight.add(running);
        inFlight.add(done);

        inFlight.abandonAll("agent x closed");
        assertThat(inFlight.count()).isZero();
        assertThat(running.state()).isEqualTo(TransferState.CANCELLED);
        assertThat(running.completion()).failsWithin(java.time.Duration.ZERO)
                .withThrowableOfType(java.util.concurrent.ExecutionException.class)
                .withMessageContaining("cancelled: agent x closed");
        assertThat(done.state()).isEqualTo(TransferState.DONE);
    }
}
