package io.nixlconnect.transport.nixl;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * The NIXL agents of one test, registered with {@code @RegisterExtension final NixlAgents agents = new NixlAgents()}:
 * the transport CI provides ({@code .ci/nixl-setup.sh}), opened once for the whole test run, or the test is skipped
 * with the reason; agents made by {@link #open} are closed after the test, after its own {@code @AfterEach} methods
 * (which may still release what they registered). Closing an agent twice is harmless: a test may close one itself.
 */
final class NixlAgents implements BeforeEachCallback, AfterEachCallback {

    private static final ExtensionContext.Namespace NAMESPACE = ExtensionContext.Namespace.create(NixlAgents.class);
    private static final AtomicLong IDS = new AtomicLong();

    /** Held: the cleaner closes the core of an agent no longer reachable. */
    private final List<NixlAgent> opened = new ArrayList<>();
    private NixlTransport transport;

    /** NIXL loaded once per test run, closed at its end (the store closes what is AutoCloseable). */
    private static final class SharedTransport implements AutoCloseable {
        final NixlTransport transport = NixlTestSupport.openOrNull();

        @Override
        public void close() {
            if (transport != null) {
                transport.close();
            }
        }
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        transport = context.getRoot().getStore(NAMESPACE)
                .computeIfAbsent(SharedTransport.class, type -> new SharedTransport(), SharedTransport.class).transport;
        NixlTestSupport.skipUnlessLoaded(transport);
    }

    @Override
    public void afterEach(ExtensionContext context) {
        // In the order opened: the first is the test's active agent, which unloads the others it loaded as it closes.
        opened.forEach(agent -> agent.core().close());
        opened.clear();
    }

    /** The loaded transport (the test was skipped if there is none). */
    NixlTransport transport() {
        return transport;
    }

    /** A new agent named {@code role-N}, closed after the test. */
    NixlAgentCore open(String role) {
        NixlAgent agent = (NixlAgent) transport.createAgent(role + "-" + IDS.incrementAndGet());
        opened.add(agent);
        return agent.core();
    }

    /** {@code call} under {@code core}'s lifecycle read lock, as the agent runs every native call. */
    static <T> T underReadLock(NixlAgentCore core, Supplier<T> call) {
        core.lifecycle.readLock().lock();
        try {
            return call.get();
        } finally {
            core.lifecycle.readLock().unlock();
        }
    }

    /** Deregisters what {@code registrations} hold, under the write lock, as the agent does when it closes. */
    static void releaseAll(NixlAgentCore core, NixlRegistrations registrations) {
        core.lifecycle.writeLock().lock();
        try {
            registrations.releaseAll();
        } finally {
            core.lifecycle.writeLock().unlock();
        }
    }

    /** Loads {@code peer}'s metadata into {@code peers} (of {@code core}), as a transfer to it does first. */
    static void load(NixlAgentCore core, NixlPeers peers, NixlAgentCore peer) {
        underReadLock(core, () -> peers.load(peer.localMetadata(), peer.name()));
    }

    static byte[] key(String key) {
        return key.getBytes(StandardCharsets.UTF_8);
    }
}
