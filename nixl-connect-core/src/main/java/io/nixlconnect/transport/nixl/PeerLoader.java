package io.nixlconnect.transport.nixl;

import io.nixlconnect.transport.InvalidAgentMetadataException;
import io.nixlconnect.transport.TransportException;

import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Loads a peer's metadata into one NIXL agent: checks it in Java first (NIXL trusts the blob), then loads it through
 * {@link NixlPeers} under the agent's lifecycle read lock, and while transfers to an agent of that name stand in the
 * way ({@link NixlPeers.PeerBusyException}) waits for them to end holding no lock, and tries again.
 */
final class PeerLoader {

    /**
     * Bounds the wait of a load for transfers to a peer of the same name (each also ends at its own operation
     * timeout, which is far shorter).
     */
    static final long MAX_PEER_WAIT_NANOS = TimeUnit.MINUTES.toNanos(10);

    private final NixlAgentCore core;
    private final NixlPeers peers;
    private final TransfersInFlight inFlight;

    PeerLoader(NixlAgentCore core, NixlPeers peers, TransfersInFlight inFlight) {
        this.core = core;
        this.peers = peers;
        this.inFlight = inFlight;
    }

    /** Loads a peer after checking its metadata in Java (see {@link NixlPeers#load}); returns its name. */
    String load(byte[] metadata) {
        if (metadata == null || metadata.length == 0) {
            throw new IllegalArgumentException("remote agent metadata must not be null or empty");
        }
        // NIXL trusts the blob; everything it could mis-handle is refused here, before any native call.
        NixlMetadataFormat.Parsed parsed = NixlMetadataFormat.validate(metadata);
        if (parsed.agent().equals(core.name())) {
            throw new InvalidAgentMetadataException("Agent", "is this agent's own name '" + core.name() + "'");
        }
        long deadline = System.nanoTime() + MAX_PEER_WAIT_NANOS;
        while (true) {
            List<CompletableFuture<Void>> pending;
            core.lifecycle.readLock().lock();
            try {
                core.ensureOpen();
                return peers.load(metadata, parsed.agent());
            } catch (NixlPeers.PeerBusyException busy) {
                pending = inFlight.completionsTo(parsed.agent());
                if (pending.isEmpty()) {
                    Thread.yield(); // they ended meanwhile (their requests are being released)
                    continue;
                }
            } finally {
                core.lifecycle.readLock().unlock();
            }
            awaitEnds(pending, parsed.agent(), deadline);
        }
    }

    /**
     * Waits, holding no lock, for transfers that stand in the way of new metadata for {@code remote} (issue 22 item
     * 5: a second agent under a producer's name, or a peer whose connection failed). They end by themselves: done,
     * failed, or at their operation timeout.
     */
    private void awaitEnds(List<CompletableFuture<Void>> pending, String remote, long deadline) {
        try {
            CompletableFuture.allOf(pending.toArray(CompletableFuture[]::new))
                    .get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (ExecutionException | CancellationException e) {
            // one of them failed or was cancelled: it has ended all the same
        } catch (TimeoutException e) {
            throw new TransportException("NIXL agent " + core.name() + " cannot take new metadata for peer '" + remote
                    + "': " + pending.size() + " transfer(s) to an agent of that name are still in flight after "
                    + TimeUnit.NANOSECONDS.toMinutes(MAX_PEER_WAIT_NANOS) + " minutes");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TransportException("NIXL agent " + core.name() + ": interrupted while waiting for the transfers"
                    + " to '" + remote + "' to end before taking its new metadata");
        }
    }
}
