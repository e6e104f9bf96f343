package io.nixlconnect.dynamo.internal.discovery;

import io.nixlconnect.dynamo.DynamoInstance;
import io.nixlconnect.dynamo.EndpointId;
import java.util.List;
import java.util.function.LongConsumer;
import java.util.function.LongFunction;

/** Dynamo's discovery, as a runtime uses it: find an endpoint's instances and follow them, register its own. */
public interface Discovery extends AutoCloseable {

    /** Told each time an endpoint's instances change: all of them now, sorted by instance id. */
    interface Listener {
        void instancesChanged(List<DynamoInstance> instances);
    }

    /** Following one endpoint until closed. */
    interface Watch extends AutoCloseable {
        List<DynamoInstance> instances();

        @Override
        void close();
    }

    /** One registered instance record, kept alive until closed (which removes it). */
    interface Registration extends AutoCloseable {
        @Override
        void close();
    }

    /**
     * Starts following an endpoint: the listener hears the instances as they are now (before this returns, when
     * discovery could be read) and each change after.
     */
    Watch watch(EndpointId endpoint, Listener listener);

    /**
     * The id this runtime's instances register under: the lease id with etcd (granted on first use), a random
     * 64-bit number with files.
     *
     * @throws io.nixlconnect.dynamo.DynamoDiscoveryException if it cannot be had (etcd unreachable)
     */
    long instanceId();

    /**
     * Writes an endpoint's record and keeps it alive. {@code record} builds the record for an instance id: with etcd
     * a lost lease is replaced by a new one, under which the record is written again with the new id.
     */
    Registration register(EndpointId endpoint, LongFunction<DynamoInstance> record);

    /** Told the new id when the instance id changes (a lost etcd lease replaced). */
    void onInstanceIdChange(LongConsumer listener);

    /** Whether discovery was reachable (and the lease alive) when last tried. */
    boolean healthy();

    /** Stops following and keeping alive; removes this runtime's records (revokes its lease). */
    @Override
    void close();
}
