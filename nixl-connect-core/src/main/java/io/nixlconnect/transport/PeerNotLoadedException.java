package io.nixlconnect.transport;

/**
 * A transfer named a peer that the agent does not hold (any more): never loaded, or dropped between the caller's
 * {@link TransportAgent#loadRemoteAgent} and its post — evicted as the least recently used when other peers were
 * loaded in between. Loading the peer again and posting again is the remedy.
 */
public class PeerNotLoadedException extends TransportException {

    private static final long serialVersionUID = 1L;

    public PeerNotLoadedException(String message) {
        super(message);
    }
}
