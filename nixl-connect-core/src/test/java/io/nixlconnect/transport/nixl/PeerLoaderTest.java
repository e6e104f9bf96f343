package io.nixlconnect.transport.nixl;

import io.nixlconnect.transport.InvalidAgentMetadataException;
import io.nixlconnect.transport.TransportException;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Loading a peer's metadata: refused in Java before NIXL sees it, loaded, and refused once the agent is closed. */
class PeerLoaderTest {

    @RegisterExtension
    final NixlAgents agents = new NixlAgents();
    private NixlAgentCore core;
    private NixlAgentCore peer;
    private NixlPeers peers;
    private PeerLoader loader;

    @BeforeEach
    void twoAgents() {
        core = agents.open("loading");
        peer = agents.open("loaded");
        peers = new NixlPeers(core, NixlTestSupport.settings());
        loader = new PeerLoader(core, peers, new TransfersInFlight(core, new ProgressLoop("unstarted", core, false)));
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
