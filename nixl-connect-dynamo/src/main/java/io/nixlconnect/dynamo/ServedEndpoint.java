package io.nixlconnect.dynamo;

/**
 * An endpoint this runtime serves, registered in discovery until closed. Closing deregisters it first (callers stop
 * routing to it), then refuses its new requests and waits up to {@link DynamoSettings#shutdownGrace()} for those in
 * flight.
 */
public interface ServedEndpoint extends AutoCloseable {

    EndpointId endpoint();

    /** This instance's id, as callers see it in discovery. */
    long instanceId();

    /** Its requests being handled now. */
    int inFlight();

    /** Whether it is registered in discovery (false once closed). */
    boolean isRegistered();

    @Override
    void close();
}
