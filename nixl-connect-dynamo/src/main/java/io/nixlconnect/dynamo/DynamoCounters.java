package io.nixlconnect.dynamo;

/**
 * What a {@link DynamoRuntime} has done and refused since it started, for metrics and health: each refusal of
 * hostile or broken input is counted here as well as reported.
 *
 * @param callsStarted             requests this runtime sent as a caller
 * @param callsFailed              of those, calls that ended in a {@link DynamoException} (refused, timed out, broken,
 *                                 worker error)
 * @param callsRefused             of those, calls a worker refused ({@link DynamoRefusedException})
 * @param callsInFlight            calls whose stream is open now
 * @param requestsServed           requests this runtime's endpoints accepted and ran
 * @param requestsRefusedOverloaded requests refused with {@code "Server overloaded"} (maxConcurrentRequests reached)
 * @param requestsRefusedOther     requests refused for another reason (unknown endpoint, malformed request, shutting
 *                                 down)
 * @param requestsInFlight         requests this runtime's endpoints are handling now
 * @param handlerErrors            handlers that threw (each sent its caller an error event)
 * @param callHomeFailures         call-home addresses that refused, never answered or broke while streaming
 * @param streamsCancelled         streams cancelled, by this side's callers or by this side's endpoints' callers
 * @param protocolErrors           frames and payloads refused as malformed, truncated, slow, oversized or unknown, on
 *                                 either side
 * @param oversizedFrames          of those, frames larger than maxMessageSize (refused before allocating them)
 * @param discoveryEntriesRejected discovery records that could not be read (garbage, too large, unsupported transport)
 * @param discoveryErrors          failures to reach or update discovery (etcd unreachable, lease lost, directory
 *                                 unwritable)
 * @param requestConnectionsOpened request-plane connections this runtime opened to workers, as a caller
 * @param requestConnectionsReplaced of those, pooled connections found closed by their worker when a request was
 *                                 about to be written on them, or whose write failed before any of the request left:
 *                                 the request went over a new connection instead
 * @param idleConnectionsClosed    request-plane connections closed for carrying nothing past their idle limit, by this
 *                                 runtime's callers ({@code requestConnectionIdleTimeout}) or its server
 *                                 ({@code serverConnectionIdleTimeout})
 */
public record DynamoCounters(long callsStarted, long callsFailed, long callsRefused, long callsInFlight,
        long requestsServed, long requestsRefusedOverloaded, long requestsRefusedOther, long requestsInFlight,
        long handlerErrors, long callHomeFailures, long streamsCancelled, long protocolErrors, long oversizedFrames,
        long discoveryEntriesRejected, long discoveryErrors, long requestConnectionsOpened,
        long requestConnectionsReplaced, long idleConnectionsClosed) {
}
