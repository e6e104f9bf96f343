package io.nixlconnect.transport.nixl;

import io.nixlconnect.transport.PassiveWindow;
import io.nixlconnect.transport.TransferOp;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static io.nixlconnect.transport.nixl.NixlAgents.key;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Failure reports: sent to a loaded peer (whose window then fails), dropped otherwise, never thrown. */
class FailureReporterTest {

    @RegisterExtension
    final NixlAgents agents = new NixlAgents();
    private NixlAgentCore core;
    private NixlAgentCore peer;
    private NixlPeers peers;
    private FailureReporter reporter;

    @BeforeEach
    void twoAgents() {
        core = agents.open("reporting");
        peer = agents.open("reported-to");
        peers = new NixlPeers(core, NixlTestSupport.settings());
        reporter = new FailureReporter(core, peers, new ProgressLoop("unstarted", core, false));
    }

    private void load() {
        NixlAgents.load(core, peers, peer);
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
