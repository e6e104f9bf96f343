package io.nixlconnect.transport.nixl;

import io.nixlconnect.TestTags;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantReadWriteLock;

import static io.nixlconnect.transport.nixl.NixlAgents.underReadLock;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Issue 32: a peer's lifetime in one agent, over real NIXL agents: past the limit the least recently used peer not in
 * use is evicted, a peer unused past the idle limit is unloaded, a peer a transfer to which failed is dropped
 * (departed) and counts as reconnected when it is loaded again. The sweep is given its clock, so no test waits.
 */
@Tag(TestTags.NIXL)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class NixlPeersLifecycleTest {

    private static final Duration IDLE = Duration.ofMinutes(1);

    @RegisterExtension
    final NixlAgents agents = new NixlAgents();
    private NixlAgentCore core;
    private NixlPeers peers;

    @BeforeEach
    void consumer() {
        core = agents.open("consumer");
        peers = new NixlPeers(core, NixlPeers.NIXL, 2, IDLE);
    }

    private String load(NixlAgentCore peer) {
        return underReadLock(core, () -> peers.load(peer.localMetadata(), peer.name()));
    }

    private void sweepAt(long now) {
        underReadLock(core, () -> {
            peers.sweep(now);
            return null;
        });
    }

    @Test
    void pastTheLimitTheLeastRecentlyUsedPeerIsEvicted() {
        NixlAgentCore first = agents.open("first");
        NixlAgentCore second = agents.open("second");
        NixlAgentCore third = agents.open("third");
        load(first);
        load(second);
        load(first); // used again: the second is now the least recently used
        load(third);

        assertThat(peers.loadedCount()).isEqualTo(2);
        assertThat(peers.isLoaded(second.name())).isFalse();
        assertThat(peers.isLoaded(first.name())).isTrue();
        assertThat(peers.isLoaded(third.name())).isTrue();
        assertThat(peers.evictedCount()).isEqualTo(1);
        assertThat(load(second)).as("an evicted peer loads again").isEqualTo(second.name());
    }

    @Test
    void aPeerInUseIsNotEvictedEvenWhenItIsTheLeastRecentlyUsed() {
        NixlAgentCore posting = agents.open("posting");
        NixlAgentCore other = agents.open("other");
        NixlAgentCore third = agents.open("third");
        load(posting);
        load(other);
        // As a transfer holds it from creating its request to posting it.
        ReentrantReadWriteLock.ReadLock inUse = peers.use(posting.name());
        assertThat(inUse).isNotNull();
        try {
            load(other); // now the posting peer is the least recently used
            load(third);
        } finally {
            inUse.unlock();
        }
        assertThat(peers.isLoaded(posting.name())).as("in use: skipped").isTrue();
        assertThat(peers.isLoaded(other.name())).isFalse();
        assertThat(peers.isLoaded(third.name())).isTrue();
        assertThat(peers.evictedCount()).isEqualTo(1);
    }

    @Test
    void aPeerInUseStaysLoadedBeyondTheLimitUntilItIsFree() {
        NixlAgentCore first = agents.open("first");
        NixlAgentCore second = agents.open("second");
        NixlAgentCore third = agents.open("third");
        load(first);
        load(second);
        ReentrantReadWriteLock.ReadLock firstInUse = peers.use(first.name());
        ReentrantReadWriteLock.ReadLock secondInUse = peers.use(second.name());
        try {
            load(third);
            assertThat(peers.loadedCount()).as("none could go").isEqualTo(3);
            assertThat(peers.evictedCount()).isZero();
        } finally {
            firstInUse.unlock();
            secondInUse.unlock();
        }
        NixlAgentCore fourth = agents.open("fourth");
        load(fourth);
        assertThat(peers.loadedCount()).isEqualTo(2);
        assertThat(peers.evictedCount()).isEqualTo(2);
        assertThat(peers.isLoaded(fourth.name())).isTrue();
    }

    @Test
    void aPeerUnusedPastTheIdleLimitIsUnloadedAndOneUsedSinceIsNot() {
        NixlAgentCore idle = agents.open("idle");
        NixlAgentCore busy = agents.open("busy");
        load(idle);
        long loaded = System.nanoTime();
        sweepAt(loaded + IDLE.toNanos() / 2);
        assertThat(peers.loadedCount()).as("not idle long enough").isEqualTo(1);

        long beforeBusy = System.nanoTime(); // after the idle peer's last use, before the busy one's
        load(busy);
        sweepAt(beforeBusy + IDLE.toNanos());
        assertThat(peers.isLoaded(idle.name())).as("idle past the limit").isFalse();
        assertThat(peers.isLoaded(busy.name())).as("used within the limit").isTrue();
        assertThat(peers.idleClosedCount()).isEqualTo(1);
        assertThat(load(idle)).isEqualTo(idle.name());
        assertThat(peers.reconnectedCount()).as("an idle peer loaded again is no reconnect").isZero();
    }

    @Test
    void withNoIdleLimitAnIdlePeerStaysLoaded() {
        peers = new NixlPeers(core, NixlPeers.NIXL, 2, Duration.ZERO);
        NixlAgentCore idle = agents.open("idle");
        load(idle);
        sweepAt(System.nanoTime() + TimeUnit.DAYS.toNanos(365));
        assertThat(peers.isLoaded(idle.name())).isTrue();
        assertThat(peers.idleClosedCount()).isZero();
    }

    @Test
    void aPeerATransferToWhichFailedIsDroppedAsDepartedAndCountsAsReconnectedWhenLoadedAgain() {
        NixlAgentCore gone = agents.open("gone");
        load(gone);
        peers.markBroken(gone.name());
        sweepAt(System.nanoTime() + NixlPeers.SWEEP_INTERVAL_NANOS);

        assertThat(peers.isLoaded(gone.name())).isFalse();
        assertThat(peers.departedCount()).isEqualTo(1);
        assertThat(peers.brokenCount()).isZero();
        assertThat(load(gone)).isEqualTo(gone.name());
        assertThat(peers.reconnectedCount()).isEqualTo(1);
    }

    @Test
    void aBrokenPeerInUseIsDroppedOnlyOnceItIsFree() {
        NixlAgentCore gone = agents.open("gone");
        load(gone);
        peers.markBroken(gone.name());
        ReentrantReadWriteLock.ReadLock inUse = peers.use(gone.name());
        try {
            sweepAt(System.nanoTime() + NixlPeers.SWEEP_INTERVAL_NANOS);
            assertThat(peers.isLoaded(gone.name())).isTrue();
        } finally {
            inUse.unlock();
        }
        sweepAt(System.nanoTime() + 2 * NixlPeers.SWEEP_INTERVAL_NANOS);
        assertThat(peers.isLoaded(gone.name())).isFalse();
        assertThat(peers.departedCount()).isEqualTo(1);
    }

    @Test
    void settingsRefuseALimitBelowOneAndANegativeIdleLimit() {
        NixlSettings defaults = NixlSettings.defaults();
        assertThat(defaults.maxLoadedPeers()).isEqualTo(512);
        assertThat(defaults.peerIdleLimit()).isEqualTo(Duration.ofMinutes(30));
        assertThat(defaults.withMaxLoadedPeers(3).withPeerIdleLimit(Duration.ZERO))
                .extracting(NixlSettings::maxLoadedPeers, NixlSettings::peerIdleLimit).containsExactly(3, Duration.ZERO);
        assertThatThrownBy(() -> defaults.withMaxLoadedPeers(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("maxLoadedPeers must be at least 1");
        assertThatThrownBy(() -> defaults.withPeerIdleLimit(Duration.ofSeconds(-1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("peerIdleLimit must not be negative");
    }
}
