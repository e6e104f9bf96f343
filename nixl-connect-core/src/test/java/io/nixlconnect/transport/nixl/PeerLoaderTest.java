package io.nixlconnect.transport.nixl;

import io.nixlconnect.transport.InvalidAgentMetadataException;
import io.nixlconnect.transport.TransportException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Loading a peer's metadata: refused in Java before NIXL sees it, loaded, and refused once the agent is closed. */
class PeerLoaderTest {

    private static NixlTransport transport;
    /** Held: the cleaner closes the core of an agent no longer reachable. */
    private NixlAgent coreAgent;
    private NixlAgent peerAgent;
    private NixlAgentCore core;
    private NixlAgentCore peer;
    private NixlPeers peers;
    private PeerLoader loader;

    @BeforeAll
    static void openNixl() {
        transport = NixlTestSupport.openOrNull();
    }

    @AfterAll
    static void closeNixl() {
        if (transport != null) {
            transport.close();
        }
    }

    @BeforeEach
    void agents() {
        NixlTestSupport.skipUnlessLoaded(transport);
        long id = System.nanoTime();
        coreAgent = (NixlAgent) transport.createAgent("loading-" + id);
        core = coreAgent.core();
        peerAgent = (NixlAgent) transport.createAgent("loaded-" + id);
        peer = peerAgent.core();
        peers = new NixlPeers(core);
        loader = new PeerLoader(core, peers, new TransfersInFlight(core, new ProgressLoop("unstarted", core)));
    }

    @AfterEach
    void closeAgents() {
        if (core != null) {
            core.close();
            peer.close();
        }
    }

    @Test
    void loadsAPeerAndReturnsItsNameAndAgainItIsALookup() {
        byte[] metadata = peer.localMetadata();
        assertThat(loader.load(metadata)).isEqualTo(peer.name());
        assertThat(loader.load(metadata)).isEqualTo(peer.name());
        assertThat(peers.loadedCount()).isEqualTo(1);
        assertThat(peers.isLoaded(peer.name())).isTrue();
    }

    @Test
    void metadataThatIsMissingMalformedOrTheAgentsOwnIsRefusedBeforeNixlSeesIt() {
        assertThatThrownBy(() -> loader.load(null)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("must not be null or empty");
        assertThatThrownBy(() -> loader.load(new byte[0])).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("must not be null or empty");
        assertThatThrownBy(() -> loader.load("not metadata".getBytes(StandardCharsets.US_ASCII)))
                .isInstanceOf(InvalidAgentMetadataException.class).hasMessageContaining("nixlSerDes|");
        assertThatThrownBy(() -> loader.load(core.localMetadata())).isInstanceOf(InvalidAgentMetadataException.class)
                .hasMessageContaining("is this agent's own name '" + core.name() + "'");
        assertThat(peers.loadedCount()).isZero();
    }

    @Test
    void aClosedAgentLoadsNothing() {
        byte[] metadata = peer.localMetadata();
        core.close();
        assertThatThrownBy(() -> loader.load(metadata)).isInstanceOf(TransportException.class)
                .hasMessageContaining("NIXL agent " + core.name() + " is closed");
    }
}
