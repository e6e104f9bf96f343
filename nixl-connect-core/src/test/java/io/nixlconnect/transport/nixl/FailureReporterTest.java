package io.nixlconnect.transport.nixl;

import io.nixlconnect.transport.PassiveWindow;
import io.nixlconnect.transport.TransferOp;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Failure reports: sent to a loaded peer (whose window then fails), dropped otherwise, never thrown. */
class FailureReporterTest {

    private static NixlTransport transport;
    /** Held: the cleaner closes the core of an agent no longer reachable. */
    private NixlAgent coreAgent;
    private NixlAgent peerAgent;
    private NixlAgentCore core;
    private NixlAgentCore peer;
    private NixlPeers peers;
    private FailureReporter reporter;

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
        coreAgent = (NixlAgent) transport.createAgent("reporting-" + id);
        core = coreAgent.core();
        peerAgent = (NixlAgent) transport.createAgent("reported-to-" + id);
        peer = peerAgent.core();
        peers = new NixlPeers(core);
        reporter = new FailureReporter(core, peers, new ProgressLoop("unstarted", core));
    }

    @AfterEach
    void closeAgents() {
        if (core != null) {
            core.close();
            peer.close();
        }
    }

    private static byte[] key(String key) {
        return key.getBytes(StandardCharsets.UTF_8);
    }

    private void load() {
        core.lifecycle.readLock().lock();
        try {
            peers.load(peer.localMetadata(), peer.name());
        } finally {
            core.lifecycle.readLock().unlock();
        }
    }

    @Test
    void aReportReachesTheLoadedPeerWhoseWindowFailsNamingThisAgentAndTheCause() throws Exception {
        PassiveWindow window = peer.openWindow(TransferOp.READ, List.of(), key("reported"), 1);
        load();
        assertThat(reporter.sentLately()).isFalse();
        reporter.report(peer.name(), key("reported"), "the read timed out");
        assertThat(reporter.sentLately()).as("the loop keeps progressing while the report goes out").isTrue();
        assertThatThrownBy(() -> window.notified().get(30, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                .hasMessageContaining("the peer '" + core.name() + "' reported that its transfer ended without notifying")
                .hasMessageContaining("the read timed out");
        window.close();
    }

    @Test
    void aReportToAPeerNotLoadedIsDropped() {
        reporter.report(peer.name(), key("unloaded"), "cause");
        assertThat(reporter.sentLately()).isFalse();
    }

    @Test
    void aClosedAgentDropsTheReport() {
        load();
        core.close();
        reporter.report(peer.name(), key("closed"), "cause");
        assertThat(reporter.sentLately()).isFalse();
    }

    @Test
    void aKeyTheReportCannotCarryIsNotSent() {
        load();
        reporter.report(peer.name(), key("two\nlines"), "cause");
        reporter.report(peer.name(), new byte[0], "cause");
        assertThat(reporter.sentLately()).isFalse();
    }
}
