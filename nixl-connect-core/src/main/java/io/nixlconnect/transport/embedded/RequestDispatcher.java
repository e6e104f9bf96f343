package io.nixlconnect.transport.embedded;

import io.nixlconnect.transport.TransferOp;
import java.io.IOException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves one server connection on its handler thread: authenticates the peer, then reads each request's head,
 * refuses one with more ranges than {@code maxRangesPerRequest}, and hands the rest to the {@link RequestHandlers}
 * of its kind, until the peer closes the connection or falls out of step with it.
 */
final class RequestDispatcher {

    /** The server's log: its settings name one logger for the whole server, as before it was split. */
    private static final Logger log = LoggerFactory.getLogger(EmbeddedServer.class);

    private final EmbeddedTransport transport;
    private final EmbeddedSettings settings;
    private final PeerAuthentication authentication;
    private final RequestHandlers requests;

    RequestDispatcher(EmbeddedTransport transport, EmbeddedSettings settings, PeerAuthentication authentication) {
        this.transport = transport;
        this.settings = settings;
        this.authentication = authentication;
        this.requests = new RequestHandlers(transport);
    }

    /** Authenticates the peer on {@code connection}, then serves its requests until it closes or falls out of step. */
    void serve(ServerConnection connection) {
        try {
            Link link = authentication.server(connection.channel, transport.endpoint());
            if (link == null) {
                return;
            }
            connection.link = link;
            while (true) {
                connection.awaitRequest();
                Wire.Head head = connection.head;
                boolean more;
                try {
                    more = connection.readHead(link, head);
                } catch (Wire.UnexpectedHelloException e) {
                    authentication.refuseUnexpectedHello(link);
                    return;
                } catch (Wire.OutdatedPeerException e) {
                    Wire.writeError(link, e.getMessage()); // version 1 reads responses the same way
                    return;
                }
                if (!more) {
                    transport.counters().departed.increment(); // the peer closed its end between requests
                    return;
                }
                if (head.count() > settings.maxRangesPerRequest()) {
                    // The same answer whatever the credential; the ranges are left unread, so the connection goes.
                    Wire.writeError(link, "request of " + head.count() + " ranges refused: this peer takes at most "
                            + settings.maxRangesPerRequest() + " ranges per request (embedded setting "
                            + "maxRangesPerRequest, nixl.connect.embedded.max-ranges-per-request)");
                    return;
                }
                if (!handle(connection, link, head)) {
                    return;
                }
            }
        } catch (IOException e) {
            connection.dropReason = e.toString();
            log.debug("Embedded transport: connection dropped: {}", e.toString());
        } catch (RuntimeException e) {
            log.warn("Embedded transport: connection from {} failed", connection.address, e);
        } finally {
            connection.finished();
        }
    }

    /**
     * Serves one request.
     *
     * @return whether the connection is still in step with the peer (false: drop it)
     */
    private boolean handle(ServerConnection connection, Link link, Wire.Head head) throws IOException {
        EmbeddedAgent agent = transport.agent(head.agent());
        return switch (head.type()) {
            case Wire.NOTIFY -> requests.notify(connection, link, agent, head);
            case Wire.FAIL -> requests.failWindow(connection, link, agent, head);
            // A READ's notification comes as its own NOTIFY, once the active side has the bytes.
            case Wire.READ -> requests.moveRanges(connection, link, agent, head, TransferOp.READ);
            case Wire.IDENTIFY -> requests.identify(link);
            case Wire.READ_GRANT -> requests.grantRanges(connection, link, agent, head, true);
            case Wire.READ_GRANT_UNBOUND -> requests.grantRanges(connection, link, agent, head, false);
            case Wire.READ_INLINE -> requests.serveInline(connection, link, agent, head, TransferOp.READ);
            case Wire.WRITE_INLINE -> requests.serveInline(connection, link, agent, head, TransferOp.WRITE);
            case Wire.WRITE -> requests.write(connection, link, agent, head);
            case Wire.WRITE_STRIPE -> requests.writeStripe(connection, link, agent, head);
            default -> throw new Wire.ProtocolException("unknown request type " + head.type());
        };
    }
}
