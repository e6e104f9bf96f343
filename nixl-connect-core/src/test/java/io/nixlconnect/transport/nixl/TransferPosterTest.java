package io.nixlconnect.transport.nixl;

import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryType;
import io.nixlconnect.transport.PassiveWindow;
import io.nixlconnect.transport.TransferHandle;
import io.nixlconnect.transport.TransferOp;
import io.nixlconnect.transport.TransferState;
import io.nixlconnect.transport.TransportException;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.nixlconnect.transport.nixl.NixlAgents.key;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Posting to loaded peers: refused for others, a transfer of empty regions sends its notification alone. */
class TransferPosterTest {

    private static final MemoryRegion EMPTY = new MemoryRegion(0, 0, MemoryType.DRAM, 0);
    @RegisterExtension
    final NixlAgents agents = new NixlAgents();
    private NixlAgentCore core;
    private NixlAgentCore peer;
    private NixlPeers peers;
    private TransfersInFlight inFlight;
    private TransferPoster poster;

    @BeforeEach
    void twoAgents() {
        core = agents.open("posting");
        peer = agents.open("posted-to");
        peers = new NixlPeers(core, NixlTestSupport.settings());
        ProgressLoop unstarted = new ProgressLoop("unstarted", core, false);
        inFlight = new TransfersInFlight(core, unstarted);
        poster = new TransferPoster(core, peers, inFlight, unstarted);
    }

    private void load() {
        NixlAgents.load(core, peers, peer);
    }

    @Test
    void aPeerNotLoadedIsRefusedAndNothingIsPosted() {
        assertThatThrownBy(() -> poster.post(TransferOp.WRITE, List.of(EMPTY), peer.name(), List.of(EMPTY),
                key("refused"), false)).isInstanceOf(TransportException.class)
                .hasMessageContaining("remote agent '" + peer.name() + "' is not loaded in NIXL agent " + core.name());
        assertThat(poster.postedCount()).isZero();
    }

    @Test
    void aTransferOfEmptyRegionsIsDoneAtOnceAndItsNotificationStillGoesOut() throws Exception {
        PassiveWindow window = peer.openWindow(TransferOp.WRITE, List.of(), key("nothing-to-move"), 1);
        load();
        TransferHandle transfer = poster.post(TransferOp.WRITE, List.of(EMPTY), peer.name(), List.of(EMPTY),
                key("nothing-to-move"), false);
        assertThat(transfer.state()).isEqualTo(TransferState.DONE);
        assertThat(inFlight.count()).isZero();
        assertThat(poster.postedCount()).isEqualTo(1);
        window.notified().get(30, TimeUnit.SECONDS);
        window.close();
    }

    @Test
    void badArgumentsAreRefusedBeforeTheAgentIsAsked() {
        load();
        assertThatThrownBy(() -> poster.post(TransferOp.READ, List.of(), peer.name(), List.of(), key("k"), false))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(poster.postedCount()).isZero();
    }

    @Test
    void aFailedTransferMarksItsPeerForANewConnectionAndSaysWhatMostLikelyHappened() {
        TransportException failure = poster.failure("peer-x", "NIXL transfer READ of 1 region(s) from peer-x failed",
                -2);
        assertThat(failure).hasMessageStartingWith("NIXL transfer READ of 1 region(s) from peer-x failed: ERROR_BACKEND. ")
                .hasMessageContaining("Most likely the window this metadata describes is gone")
                .hasMessageContaining("The connection to 'peer-x' is made anew with the next metadata");
        assertThat(peers.brokenCount()).isEqualTo(1);
    }

    @Test
    void aClosedAgentPostsNothing() {
        load();
        core.close();
        assertThatThrownBy(() -> poster.post(TransferOp.WRITE, List.of(EMPTY), peer.name(), List.of(EMPTY),
                key("closed"), false)).isInstanceOf(TransportException.class).hasMessageContaining("is closed");
    }
}
